package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Table prints rows as the Python swarm printed its tables (swarm ls, ralph list): each column
// left-justified to its widest cell, counted in characters, two spaces apart, the last column
// padded too (scripts that cut the columns by position find them where they were). The first
// row sets the number of columns; no rows print nothing.
func Table(w io.Writer, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, r := range rows {
		parts := make([]string, len(r))
		for i, cell := range r {
			parts[i] = cell + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
		}
		fmt.Fprintln(w, strings.Join(parts, "  "))
	}
}
