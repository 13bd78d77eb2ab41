package swarm

import (
	"io"
	"strings"
)

// WriteWarning writes msg to w as the Python swarm wrote its warnings, "swarm: warning: "
// before the text, and before every further line of it too: a message of several lines (a
// state.json entry with each thing wrong with it on a line of its own) then reads as one
// warning, and a script that keeps the lines with the prefix keeps all of it.
func WriteWarning(w io.Writer, msg string) {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("swarm: warning: ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}
