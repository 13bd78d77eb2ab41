package swarmrun

import (
	"strings"

	"github.com/agentfleet/fleet/internal/executor"
)

// The executor floor's types, under the names the scheduler has always used (package
// executor holds them; these names keep run.go's code as it is).
type (
	Executor = executor.Executor
	Slot     = executor.Slot
	Job      = executor.Job
	Outcome  = executor.Outcome
)

// Template is the template name the run records carry (executor.Local.Template), so that
// analyze-runs groups the executions' attempts.
const Template = "swarm-run"

// oneLine is err's message on one line.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// leaseMargin is what a task held by an offline host waits past the attempt's deadline there.
const leaseMargin = executor.LeaseMargin
