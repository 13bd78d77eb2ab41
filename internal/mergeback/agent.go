package mergeback

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/record"
)

// AgentResolver hands a conflict to an agent as a task of its own: one attempt through an
// executor (executor.Local: attempt.Open and Launch, a supervisor of its own, run and result
// records under bead <owner>.merge-<task>), in the scratch worktree where the merge stopped.
// Merge then checks its work and tests it like any other merge.
type AgentResolver struct {
	Exec executor.Executor
	// Agent and Model name the agent profile and model.
	Agent, Model string
	// Timeout bounds the attempt (0: none).
	Timeout time.Duration
	// Env is added to the agent's environment.
	Env []string
}

// Close lets go of what the executor keeps between attempts (executor.Local's slot
// supervisors), once the merge is over.
func (a *AgentResolver) Close() {
	if c, ok := a.Exec.(interface{ Close() }); ok {
		c.Close()
	}
}

// Template is the template name the resolving attempts' run records carry, so that
// analyze-runs groups them apart from the runs' own tasks.
const Template = "merge-back"

// Bead is the bead of the attempt resolving task id's conflict in owner's merge: the '.' keeps
// it apart from the run's own beads, <execution>-<task> (neither has one) and <plan>-<task>.
func Bead(owner, id string) string { return owner + ".merge-" + id }

// Resolve runs the agent on c and waits for its end: done is resolved, anything else is an
// error naming the attempt's end.
func (a *AgentResolver) Resolve(ctx context.Context, c Conflict) (string, error) {
	slots := a.Exec.Slots()
	if len(slots) == 0 {
		return a.Agent, errors.New("the executor has no slot")
	}
	bead := Bead(c.Owner, c.ID)
	if err := record.CheckBead(bead); err != nil {
		return a.Agent, err
	}
	job := executor.Job{Task: "merge-" + c.ID, Bead: bead, Agent: a.Agent, Model: a.Model,
		Prompt: Prompt(c), Dir: c.Dir, Timeout: a.Timeout, MaxAttempts: 1, Env: a.Env}
	out := a.Exec.Run(ctx, slots[0], job)
	if out.Status != record.StatusDone {
		why := out.Status
		if out.Reason != "" {
			why += ": " + out.Reason
		}
		return a.Agent, fmt.Errorf("agent %s (bead %s, attempt %d) ended %s", a.Agent, bead, out.Attempt, why)
	}
	return a.Agent, nil
}

// Prompt is what the agent resolving c is asked.
func Prompt(c Conflict) string {
	return fmt.Sprintf(`Merging branch %s (task %s of %s) into %s stopped on conflicts in these files:

%s

Resolve the conflicts in this directory: edit each file so that it keeps the intent of both
sides, and remove every conflict marker (<<<<<<<, =======, >>>>>>>). Do not switch branches and
do not abort the merge. Staging and committing are optional: the merge is committed and tested
after you exit.
`, c.Branch, c.ID, c.Owner, c.Into, "- "+strings.Join(c.Files, "\n- "))
}
