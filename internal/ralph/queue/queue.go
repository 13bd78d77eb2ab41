// Package queue is ralph's task queue: a plan split into tasks with dependencies, worked
// through by several agents at once, each task a supervised dispatch with run and result
// records, with retries and a budget. `ralph queue …` is this package's Run.
package queue

import (
	"fmt"
	"io"
)

// Run runs `ralph queue` verb args[1] (args[0] is "ralph queue") and returns the exit status.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "%s: error: not implemented yet\n", args[0])
	return 1
}
