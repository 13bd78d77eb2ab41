package worker

import (
	"errors"
	"testing"
	"time"
)

// Durations longer than a time.Duration holds are refused, not wrapped (issue 17:
// --interval 99999999999h became a negative interval that beat at every idle moment).
func TestDurationRange(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  error
	}{
		{"90s", 90 * time.Second, nil},
		{"2562047h", 2562047 * time.Hour, nil},
		{"2562048h", 0, ErrDurationRange},
		{"99999999999h", 0, ErrDurationRange},
		{"9999999999999999h", 0, ErrDurationRange},          // over int64 seconds too
		{"99999999999999999999", 0, ErrDurationRange},       // bare seconds over int64
		{"2562047h99999999999999999m", 0, ErrDurationRange}, // the sum
	} {
		got, err := Duration(tt.in)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("Duration(%q) = %v, %v, want %v, %v", tt.in, got, err, tt.want, tt.err)
		}
		if got < 0 {
			t.Errorf("Duration(%q) = %v, negative", tt.in, got)
		}
	}
	h := &Heartbeat{IntervalSeconds: 99999999999 * 3600}
	if got := h.Interval(); got != MaxDuration {
		t.Errorf("Interval() of %d s = %v, want MaxDuration", h.IntervalSeconds, got)
	}
}
