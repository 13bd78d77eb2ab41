package remote

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain line":                                 "plain line",
		"title \x1b]0;pwned\x07set":                  "title set",
		"clear\x1b[2J \x1b[31mred\x1b[0m":            "clear red",
		"two\nlines\r\n":                             "two lines",
		"bidi \u202eevil\u202c end":                  "bidi evil end",
		"clipboard \x1b]52;c;Y2xpcA==\x1b\\ written": "clipboard written",
		"c1 \u009b2J csi":                            "c1 csi",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
