package record

import (
	"strings"
	"time"
)

// TimeLayout is the layout of every timestamp this package writes: UTC, whole seconds, "Z".
const TimeLayout = "2006-01-02T15:04:05Z"

// FormatTime renders t as the records' timestamps are written.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// IsPlaceholder reports whether s is the '$START' placeholder some legacy records carry as
// started_at (a shell variable the old dispatcher quoted instead of expanding).
func IsPlaceholder(s string) bool { return s == "'$START'" || s == "$START" }

// readLayouts are the forms timestamps take in users' records: RFC 3339 with or without
// fractional seconds and with Z or an offset, and Python's isoformat without a zone.
var readLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

// ParseTime reads a record timestamp. A time without a zone is taken as UTC. ok is false for the
// '$START' placeholder, an empty string, or anything else that is not a time.
func ParseTime(s string) (t time.Time, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" || IsPlaceholder(s) {
		return time.Time{}, false
	}
	for _, layout := range readLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// Seconds returns the whole seconds from start to end, when both are times and end is not
// before start.
func Seconds(start, end string) (int64, bool) {
	s, ok1 := ParseTime(start)
	e, ok2 := ParseTime(end)
	if !ok1 || !ok2 || e.Before(s) {
		return 0, false
	}
	return int64(e.Sub(s) / time.Second), true
}
