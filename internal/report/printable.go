package report

import (
	"strings"

	"github.com/agentfleet/fleet/internal/screen"
)

// printable makes text from a record safe to print in a report. A record is written by an
// agent's dispatcher from what it was given, and a report is read on a terminal, pasted in a
// chat or opened in a spreadsheet: terminal control sequences are removed (screen.Strip: a
// title or clipboard write, a screen clear, their C1 forms, a lone ESC, BEL, DEL, NUL), line
// breaks and tabs become spaces (a record cannot forge a line of the report), and the
// bidirectional controls that reorder what a reader sees are dropped. Plain ASCII, the common
// case, is returned as it is.
func printable(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t' || r == '\u2028' || r == '\u2029':
			return ' '
		case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069', r == '\u200e', r == '\u200f', r == '\u061c':
			return -1
		}
		return r
	}, screen.Strip(s))
}

// csvCell is printable(s), neutralised for spreadsheets: a cell that begins with '=', '+',
// '-' or '@' is read as a formula by Excel, LibreOffice and Google Sheets (and can run one),
// so it gets a leading apostrophe, which they show as text (OWASP's advice for CSV injection).
func csvCell(s string) string {
	s = printable(s)
	if s != "" && strings.IndexByte("=+-@", s[0]) >= 0 {
		return "'" + s
	}
	return s
}
