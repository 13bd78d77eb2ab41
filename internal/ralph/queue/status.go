package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"github.com/agentfleet/fleet/internal/screen"
)

// Status is a plan's status: ralph queue status --json's document.
type Status struct {
	PlanID         string         `json:"plan_id"`
	Tasks          int            `json:"tasks"`
	Counts         map[string]int `json:"counts"`
	RunnerActive   bool           `json:"runner_active"`
	TotalCostUSD   float64        `json:"total_cost_usd"`
	BudgetLimitUSD *float64       `json:"budget_limit_usd"`
	// ETASeconds is the time left while a runner is at work: the tasks left times the average
	// duration of a task, over the agents at work; null when it cannot be told.
	ETASeconds *float64      `json:"eta_seconds"`
	Agents     []store.Agent `json:"agents"`
	// Open lists every task not done: pending, claimed, failed, blocked, skipped.
	Open []store.Task `json:"open"`
	// BaseBranch is the branch the tasks' worktrees start from (ralph queue run --worktree);
	// Branches every task's branch, by task id.
	BaseBranch string            `json:"base_branch,omitempty"`
	Branches   map[string]string `json:"branches,omitempty"`
	// MergeOrder is the done tasks whose branches merge cleanly onto the base branch in that
	// order (each after its dependencies; git merge-tree, nothing checked out); MergeConflict
	// the first that does not, where the order stops.
	MergeOrder    []string       `json:"merge_order,omitempty"`
	MergeConflict *MergeConflict `json:"merge_conflict,omitempty"`
}

// MergeConflict is a done task's branch that merges onto the base and the branches before it
// only with conflicts.
type MergeConflict struct {
	TaskID string   `json:"task_id"`
	Branch string   `json:"branch"`
	Files  []string `json:"files"`
}

// StatusOf is plan id's status in dir, read without the queue's lock: the tasks by status,
// the agents of the last run, the cost against the budget, whether a runner is at work, and an
// estimate of the time left while one is.
func StatusOf(ctx context.Context, dir store.Dir, id string) (*Status, error) {
	s := store.New(dir, id)
	q, err := s.View()
	if err != nil {
		return nil, err
	}
	p, err := s.ViewProgress()
	if err != nil {
		return nil, err
	}
	open := slices.DeleteFunc(append([]store.Task{}, q.Tasks()...), func(t store.Task) bool { return t.Status == store.Done })
	st := &Status{PlanID: id, Tasks: q.Len(), Counts: q.Counts(), TotalCostUSD: p.TotalCostUSD,
		BudgetLimitUSD: p.BudgetLimitUSD, Agents: p.Agents, Open: open}
	if unlock, err := dir.LockRunner(ctx); err == nil {
		unlock()
	} else if errors.Is(err, store.ErrRunnerActive) {
		st.RunnerActive = true
	}
	mergeOrder(ctx, dir, q, p, st)
	if st.RunnerActive && p.AgentsActive > 0 && p.Performance.AvgDurationSeconds > 0 {
		left := st.Counts[store.Pending] + st.Counts[store.Claimed]
		eta := math.Ceil(float64(left) * p.Performance.AvgDurationSeconds / float64(p.AgentsActive))
		st.ETASeconds = &eta
	}
	return st, nil
}

// mergeOrder fills st's branches and the merge order of the done tasks' branches that exist.
// A repository git cannot read gives no order (status is about the queue; the order is help).
func mergeOrder(ctx context.Context, dir store.Dir, q *store.Queue, p *store.Progress, st *Status) {
	st.BaseBranch, st.Branches = p.BaseBranch, map[string]string{} // none: omitted (omitempty)
	repo := git.Repo{Dir: filepath.Dir(filepath.Dir(dir.Root))}
	var order []string
	branch, deps := map[string]string{}, map[string][]string{}
	var have map[string]bool // the agent/ branches, read once
	for _, t := range q.Tasks() {
		if t.Branch == "" {
			continue
		}
		st.Branches[t.ID] = t.Branch
		if t.Status != store.Done {
			continue
		}
		if have == nil {
			have = repo.BranchesUnder(ctx, "agent/")
		}
		if have[t.Branch] {
			order = append(order, t.ID)
			branch[t.ID], deps[t.ID] = t.Branch, t.Dependencies
		}
	}
	if len(order) == 0 || p.BaseBranch == "" {
		return
	}
	mo, c, err := repo.MergeOrder(ctx, p.BaseBranch, order, branch, deps, repo.Identity(ctx, "ralph queue", "ralph-queue@localhost"))
	if err != nil {
		return
	}
	st.MergeOrder = mo
	if c != nil {
		st.MergeConflict = &MergeConflict{TaskID: c.ID, Branch: c.Branch, Files: c.Files}
	}
}

// WriteStatus writes st as ralph queue status' text; every name and description from the
// files is stripped of control sequences.
func WriteStatus(w io.Writer, st *Status) error {
	n := st.Counts
	fmt.Fprintf(w, "plan %s: %d tasks: %d done, %d claimed, %d pending, %d failed, %d blocked, %d skipped\n", clean(st.PlanID), st.Tasks,
		n[store.Done], n[store.Claimed], n[store.Pending], n[store.Failed], n[store.Blocked], n[store.Skipped])
	runner := "no runner at work"
	if st.RunnerActive {
		runner = "a runner is at work"
	} else if n[store.Claimed] > 0 {
		runner += fmt.Sprintf(" (%d claims left by one that stopped: 'ralph queue run' takes them back)", n[store.Claimed])
	}
	fmt.Fprintf(w, "%s; cost $%s%s", runner, rails.Dollars(st.TotalCostUSD), budgetNote(st.BudgetLimitUSD))
	if st.ETASeconds != nil {
		fmt.Fprintf(w, "; about %s left", duration(*st.ETASeconds))
	}
	fmt.Fprintln(w)
	if st.BaseBranch != "" && len(st.Branches) > 0 {
		var order []string
		for _, id := range st.MergeOrder {
			order = append(order, clean(id)+" ("+clean(st.Branches[id])+")")
		}
		if len(order) == 0 {
			order = []string{"none yet"}
		}
		fmt.Fprintf(w, "worktrees from %s; merge order: %s\n", clean(st.BaseBranch), strings.Join(order, ", "))
		if c := st.MergeConflict; c != nil {
			fmt.Fprintf(w, "the merge order stops before %s: %s conflicts in %s\n", clean(c.TaskID), clean(c.Branch), clean(strings.Join(c.Files, ", ")))
		}
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	if len(st.Agents) > 0 {
		fmt.Fprintln(tw, "\nAGENT\tSTATUS\tTASK\tTASKS RUN\tCOST\tTIME")
		for _, a := range st.Agents {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t$%s\t%s\n", clean(a.ID), clean(a.Status), clean(orElse(a.TaskID, "-")),
				a.Tasks, rails.Dollars(a.CostUSD), duration(a.DurationSeconds))
		}
	}
	if len(st.Open) > 0 {
		// A column of branches when the tasks have them (--worktree).
		branchCell := func(s string) string {
			if len(st.Branches) == 0 {
				return ""
			}
			return s + "\t"
		}
		fmt.Fprintf(tw, "\nTASK\tSTATUS\tRETRIES\tAGENT\t%sDESCRIPTION\n", branchCell("BRANCH"))
		for _, t := range st.Open {
			branch := branchCell(clean(cmp.Or(t.Branch, "-")))
			desc := clean(t.Description)
			if t.Error != "" {
				desc += " [" + clean(t.Error) + "]"
			}
			if len(desc) > 80 {
				desc = desc[:77] + "..."
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s%s\n", clean(t.ID), clean(t.Status), t.Retries, clean(orElse(t.ClaimedBy, "-")), branch, desc)
		}
	}
	return tw.Flush()
}

// clean makes a string from the queue's files safe to print: no control sequence, one line.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, screen.Strip(s))
	return strings.Join(strings.Fields(s), " ")
}

func duration(secs float64) string {
	s := int64(secs)
	switch {
	case s >= 3600:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	case s >= 60:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%ds", s)
}
