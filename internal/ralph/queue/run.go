package queue

import (
	"context"
	"fmt"
	"os"

	"github.com/agentfleet/fleet/internal/ralph/queue/runner"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/ralph/rails"
)

// Run works through the queue of cfg.Store with cfg.Agents agents (runner.Run), holding the
// directory's runner lock for its whole life: while it works, a second Run, an Init, or
// anything else that takes the lock in the directory is refused (store.ErrRunnerActive). The
// state directory is made first; a plan without a queue is an error before anything starts.
func Run(ctx context.Context, cfg runner.Config) (*runner.Result, error) {
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}
	if _, err := cfg.Store.View(); err != nil {
		return nil, err
	}
	unlock, err := cfg.Store.Dir.LockRunner(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return runner.Run(ctx, cfg)
}

// Summary is the line that ends a run of plan id: its tasks by status and its cost, against
// the budget if there is one.
func Summary(id string, res *runner.Result, budget *float64) string {
	n := res.Counts
	return fmt.Sprintf("plan %s: %d done, %d failed, %d blocked, %d skipped, %d pending, %d claimed; cost $%s%s", id,
		n[store.Done], n[store.Failed], n[store.Blocked], n[store.Skipped], n[store.Pending], n[store.Claimed],
		rails.Dollars(res.CostUSD), budgetNote(budget))
}
