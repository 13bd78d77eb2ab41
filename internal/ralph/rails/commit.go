package rails

import (
	"context"

	"github.com/agentfleet/fleet/internal/ralph/checkpoint"
)

// Commit is the commit-each rail's commit after iteration (or attempt) n of loop: every change
// of the working tree dir but the paths of leaveOut (the loop's own files, when they are inside
// it), with trailers naming the loop and the iteration (internal/ralph/checkpoint). It returns
// the commit's short name, as every log shows it, or "" when nothing changed: no change, no
// commit. The caller checks CommitEach, and says what happened in its own log.
func Commit(ctx context.Context, dir string, leaveOut []string, loop string, n int) (string, error) {
	head, err := checkpoint.Commit(ctx, dir, leaveOut, loop, n)
	return Short(head), err
}

// Short is a commit's name as the logs show it: its first 12 hex digits.
func Short(hash string) string { return hash[:min(12, len(hash))] }
