// Package loop is swarm's ralph loop: an interactive agent started again and again as a swarm
// worker on the same prompt file until a done pattern, a limit, or a person stops it. `ralph
// spawn|run|status|pause|resume|stop|list|logs|clean|init|template` and `swarm ralph …` are
// this package's Run.
package loop

import (
	"context"
	"fmt"
	"io"
)

// Summary is one loop as `ralph list` shows it beside AIWG's loops.
type Summary struct {
	Name          string `json:"name"`
	Status        string `json:"status"`        // running, paused, stopped, failed
	WorkerStatus  string `json:"worker_status"` // running, stopped, removed
	Iteration     int    `json:"current_iteration"`
	MaxIterations int    `json:"max_iterations"`
	Failures      int    `json:"consecutive_failures"`
	TotalFailures int    `json:"total_failures"`
	ExitReason    string `json:"exit_reason,omitempty"`
}

// Run runs the verb args[1] (args[0] is the tool's name as it prints it: "ralph" or
// "swarm ralph") and returns the exit status.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "%s: error: not implemented yet\n", args[0])
	return 1
}

// List is every loop of the swarm directory swarmDir.
func List(ctx context.Context, swarmDir string) ([]Summary, error) { return nil, nil }
