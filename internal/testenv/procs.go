package testenv

import (
	"slices"

	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/supervise"
)

// Supervisors is the pids of the processes running a supervisor whose command line names dir
// (the supervise verb and dir as whole arguments: an attempt's --state-dir, a worker's
// --swarm-dir): what a test checks is gone once the loop or run it started says it ended.
func Supervisors(dir string) []int {
	var pids []int
	for _, pid := range proc.PIDs() {
		if args, err := proc.Args(pid); err == nil && slices.Contains(args, supervise.SuperviseVerb) && slices.Contains(args, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}
