// Package queue is ralph's task queue as a library: a plan split into tasks with
// dependencies, worked through by several agents at once, each task a supervised dispatch with
// run and result records, with retries and a budget. cmd/ralph's `queue` verbs are its command
// line: init is ReadPlan and Init, run is Run, status StatusOf and WriteStatus, retry Retry,
// skip Skip, add Add. The plan's format is package plan's, the queue's files package store's,
// the agents' work package runner's.
package queue

import (
	"fmt"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/ralph/rails"
)

// ReadPlan reads the plan file at path (at most plan.MaxSize bytes) and parses its tasks, in
// any plan format; it does not check them (plan.Check, Init and Add do).
func ReadPlan(path string) ([]plan.Task, error) {
	doc, err := fsx.ReadFileLimit(path, plan.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	return plan.Parse(path, doc)
}

// queued is a plan's task as the queue first holds it.
func queued(t plan.Task, now string) store.Task {
	deps := append([]string{}, t.Dependencies...)
	st := store.Task{ID: t.ID, Description: t.Description, Status: store.Pending, Dependencies: deps, CreatedAt: now}
	if t.Done {
		st.Status, st.CompletedAt = store.Done, &now
	}
	return st
}

// Money is an amount in USD as the queue prints it, two decimals: rails.Dollars, named here
// for ralph queue run's message (cmd/ralph).
func Money(v float64) string { return rails.Dollars(v) }

// budgetNote is " of a $B budget", or nothing without a budget.
func budgetNote(b *float64) string {
	if b == nil {
		return ""
	}
	return " of a $" + rails.Dollars(*b) + " budget"
}
