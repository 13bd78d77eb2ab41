// Package aiwg is AIWG's ralph loop: a task run headless again and again until a completion
// command passes, with a registry of loops per workspace (.aiwg/ralph), checkpoints, and the
// seed's status transitions. `ralph start|abort|report` and, for a loop id, `ralph
// status|pause|resume` are this package's Run; `ralph list` shows its loops and swarm's.
//
// Files (seed 003): .aiwg/ralph/registry.json (the active loops, at most MaxConcurrent unless
// forced), .aiwg/ralph/loops/<loop_id>/state.json (State, validated against the embedded
// loop-state schema on every write), checkpoints/iteration-NNN.json.gz, controller.log (a
// background controller's output). Each iteration is a dispatched attempt of bead
// <loop_id>-<i> in the loop's state directory (STATE_DIR, else .aiwg/ralph/state), so its run
// and result records are dispatch's and analyze-runs reports them.
package aiwg

import "regexp"

var loopID = regexp.MustCompile(`^ralph-[a-z0-9-]*-[0-9a-f]{8}$`)

// IsLoopID tells an AIWG loop id (ralph-<slug>-<8 hex>) from a swarm loop's name.
func IsLoopID(s string) bool { return loopID.MatchString(s) }
