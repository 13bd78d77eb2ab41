package record

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s with every character a terminal would obey or a reader could be misled
// by written as a Go escape: control characters (\n, \x1b, the C1 controls), bidirectional
// controls (\u202e) and bytes that are not UTF-8. It is for diagnostics that show what a state
// directory holds (a file name, a value from a record), which must not be able to retitle the
// terminal, write its clipboard or forge a line of output. Printable text is returned as it is.
func Printable(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || hidden(r) {
			q := strconv.QuoteToASCII(s[i : i+size])
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// QuoteName returns a file name as it is when it is printable, else Go-quoted
// ("state/runs/\x1b]0;x\a.json"), so that a name holding a newline or an escape is neither
// obeyed by the terminal nor read as two lines. Names that need no quoting are not quoted, so
// output that scripts grep keeps its form.
func QuoteName(name string) string {
	if isPrintable(name) {
		return name
	}
	return `"` + Printable(strings.ReplaceAll(name, `"`, `\"`)) + `"`
}

func isPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return isPrintableSlow(s[i:])
		}
	}
	return true
}

func isPrintableSlow(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || hidden(r) {
			return false
		}
		i += size
	}
	return true
}

// hidden reports whether r is a control character or a bidirectional control.
func hidden(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}
