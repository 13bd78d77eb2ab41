package supervise

import (
	"strings"
	"testing"
)

func TestSplitLines(t *testing.T) {
	long := strings.Repeat("a", 5000)
	tests := []struct {
		name   string
		text   string
		piece  int
		crEnds bool
		eof    byte
		want   string
		err    bool
	}{
		{"short line as is", "hello\n", 4, false, 4, "hell\x04o\n", false},
		{"newline restarts the count", "abc\nabc", 3, false, 4, "abc\nabc", false},
		{"carriage return ends a line with ICRNL", "abc\rabcd", 3, true, 4, "abc\rabc\x04d", false},
		{"carriage return is a character without", "ab\rab", 3, false, 4, "ab\r\x04ab", false},
		{"a UTF-8 character is not cut", "aé", 2, false, 4, "a\x04é", false},
		{"no EOF character, line fits", "abcd", 3, false, 0, "abcd", false},
		{"no EOF character, line too long", long, 3072, false, 0, "", true},
	}
	for _, tt := range tests {
		got, err := splitLines(tt.text, tt.piece, tt.crEnds, tt.eof)
		if (err != nil) != tt.err || (err == nil && string(got) != tt.want) {
			t.Errorf("%s: splitLines(%q, %d, %v, %d) = %q, %v, want %q (error %v)", tt.name, tt.text, tt.piece, tt.crEnds, tt.eof, got, err, tt.want, tt.err)
		}
	}
}
