package remote

import (
	"strings"
	"unicode"

	"github.com/agentfleet/fleet/internal/screen"
)

// Printable makes a host's text (a line of its output, a reason in its records) fit to print
// on a terminal and in a markdown line: terminal control sequences are removed as they are
// from an agent's output (screen.Strip, the sanitiser of swarm logs and of a run's logs), the
// bidirectional controls that reorder what a reader sees are dropped, and every run of white
// space, line breaks included, is one space: a host cannot retitle the terminal, clear it or
// forge a line of swarm run's output or report.
func Printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r) {
			return -1
		}
		return r
	}, screen.Strip(s))
	return strings.Join(strings.Fields(s), " ")
}
