package top

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/worker"
)

// Columns are the table's columns, as `swarm top --once` prints them and the UI shows them.
var Columns = []string{"KIND", "NAME", "STATUS", "ACTIVITY", "AGE", "ITER", "COST", "EXIT", "LAST"}

// Cells is r's row of the table at now: "-" for what is not known.
func (r *Row) Cells(now time.Time) []string {
	name := r.Name
	if r.Kind == KindLoop && r.Source == "aiwg" || r.Kind == KindTask {
		name = r.Source + ":" + r.Name
	}
	age := "-"
	if !r.Started.IsZero() {
		age = worker.Age(r.Started, now)
	}
	iter := "-"
	switch {
	case r.Iteration > 0 && r.MaxIterations > 0:
		iter = fmt.Sprintf("%d/%d", r.Iteration, r.MaxIterations)
	case r.Iteration > 0:
		iter = fmt.Sprint(r.Iteration)
	case r.Attempt > 0:
		iter = fmt.Sprintf("#%d", r.Attempt)
	}
	cost := "-"
	if r.Cost != nil {
		cost = fmt.Sprintf("$%.2f", *r.Cost)
	}
	last := r.LastLine
	if r.ScreenError != "" {
		// What the screen said last, if anything, after why it is not fresh.
		last = strings.TrimSpace("[screen " + r.ScreenError + "] " + last)
	}
	return []string{string(r.Kind), name, r.Status, r.ActivityWords(now), age, iter, cost, r.ExitWords(), last}
}

// ExitWords is the EXIT cell, as swarm ls says it: "-" while live, the exit code, with the
// reason when something else than the agent ended it ("143 killed", "? supervisor-lost").
func (r *Row) ExitWords() string {
	if r.Live || (r.ExitCode == nil && r.Reason == "") {
		return "-"
	}
	code := "?"
	if r.ExitCode != nil {
		code = fmt.Sprint(*r.ExitCode)
	}
	if r.Reason == "" || r.Reason == fmt.Sprintf("agent-exit-%s", code) {
		return code
	}
	return code + " " + r.Reason
}

// HostColumns are Columns with HOST after NAME: the table of swarm top --hosts.
var HostColumns = slices.Insert(slices.Clone(Columns), 2, "HOST")

// LocalHost is the HOST cell of this machine's agents.
const LocalHost = "local"

// HostCells is Cells with the HOST cell after NAME: the host's name ("local" for this
// machine's), "offline" after it when the host did not answer its last poll.
func (r *Row) HostCells(now time.Time) []string {
	host := r.Host
	switch {
	case host == "":
		host = LocalHost
	case r.HostOffline:
		host += " offline"
	}
	return slices.Insert(r.Cells(now), 2, host)
}
