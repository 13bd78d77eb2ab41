// Package aiwg is AIWG's ralph loop: a task run headless again and again until a completion
// command passes, with a registry of loops per workspace (.aiwg/ralph), checkpoints, and the
// seed's status transitions. `ralph start|abort|report` and, for a loop id, `ralph
// status|pause|resume` are this package's Run; `ralph list` shows its loops and swarm's.
package aiwg

import (
	"fmt"
	"io"
	"regexp"
)

var loopID = regexp.MustCompile(`^ralph-[a-z0-9-]*-[0-9a-f]{8}$`)

// IsLoopID tells an AIWG loop id (ralph-<slug>-<8 hex>) from a swarm loop's name.
func IsLoopID(s string) bool { return loopID.MatchString(s) }

// Run runs the verb args[1] (args[0] is "ralph") and returns the exit status.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "%s: error: not implemented yet\n", args[0])
	return 1
}
