package main

import (
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// printTable prints a titled table of rows, or "(none)". Borders are plain ASCII, so the output
// reads the same in a terminal, a log file and a CI job.
func printTable[T any](w io.Writer, title string, header []string, rows []T, cells func(T) []string) {
	fmt.Fprintf(w, "%s\n", title)
	if len(rows) == 0 {
		fmt.Fprintln(w, "  (none)")
		fmt.Fprintln(w)
		return
	}
	t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
		Symbols: tw.NewSymbols(tw.StyleASCII),
	})))
	t.Header(header)
	for _, r := range rows {
		t.Append(cells(r))
	}
	t.Render()
	fmt.Fprintln(w)
}
