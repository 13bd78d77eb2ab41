// Package report is the analysis behind analyze-runs: it reads a state directory's run and
// result records merged by bead, in bead order and in parallel (Source), aggregates them one at
// a time without holding the set (Aggregator), and renders the outcome as the FLYWHEEL text
// report of analyze-runs.sh, its --json document, markdown, CSV, HTML, the Prometheus text
// format, and the template scores of score-templates.sh.
//
// The semantics are the originals' (../shared/compat/ORIGINALS.md §4): a bead's outcome is its
// result's status (no result, or a null one, counts as running); a duration is the result's
// finished_at minus the run's started_at, skipping the '$START' placeholder; groups are sorted by
// key; percentages are floored when printed. Their bugs are not kept: see docs/analyze-runs.md.
package report

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentfleet/fleet/internal/record"
)

// Outcomes a bead is counted under. Any other result status counts in the total only, as the
// original counted it.
const (
	OutcomeSuccess = record.StatusDone
	OutcomeFailed  = record.StatusFailed
	OutcomeTimeout = record.StatusTimeout
	OutcomeRunning = record.StatusRunning
)

// DefaultTemplate is the template of a run that names none, as the original grouped it.
const DefaultTemplate = "custom"

// Unknown stands for a missing agent or model. The original grouped such runs under null and
// then failed to print them; here they get a name.
const Unknown = "unknown"

// Bead is one run merged with its result (and its verification, if any): the unit the
// analysis counts. With attempt history, each earlier attempt is a Bead of its own.
type Bead struct {
	ID         string // the run's bead, else its file name
	Agent      string // Unknown when the run names none
	Model      string // Unknown when the run names none
	Template   string // template_name, DefaultTemplate when null or missing
	Task       string // the prompt's kind, TaskType(prompt): all the report needs of it
	StartedAt  string // the run's started_at as written (may be the '$START' placeholder)
	Attempt    int    // 0 when a legacy record has none
	RunStatus  string // the run record's own status (score-templates reads this one)
	RunSeconds *int64 // the run record's duration_seconds

	HasResult  bool
	Status     string // the result's status; "" without a result or with a null one
	FinishedAt string // the result's finished_at; "" when missing or null
	Reason     string // the result's reason

	// Verified is the overall verdict of the verification ("pass", "fail"): the verify file's,
	// else the result's or the run's own verification field; "" when there is none.
	Verified string
	// Raw is the bead's element of the JSON report's raw_data, compact: the run record
	// as written plus result_status, result_finished_at and result_reason (and the verify
	// file's object as verification). Only kept when Source.Raw is set.
	Raw []byte

	// Seconds is the bead's duration, valid when HasSeconds: result finished_at − run started_at.
	Seconds    int64
	HasSeconds bool
	// Start is when the run started (valid when HasStart), Finish when its result says it
	// finished (valid when HasEnd): what the filters and the grouping by period go by.
	Start    time.Time
	Finish   time.Time
	HasStart bool
	HasEnd   bool
}

// Outcome is what the bead counts as: success, failed, timeout or running (no result, or a
// result whose status is null or running); any other status is returned as it is.
func (b *Bead) Outcome() string {
	switch b.Status {
	case "", record.StatusRunning:
		return OutcomeRunning
	case record.StatusDone:
		return OutcomeSuccess
	}
	return b.Status
}

// Retried reports whether the bead is a retry: attempt > 1.
func (b *Bead) Retried() bool { return b.Attempt > 1 }

// When is the time the bead is placed at for the filters and periods: its start, else its end.
func (b *Bead) When() (time.Time, bool) {
	if b.HasStart {
		return b.Start, true
	}
	return b.Finish, b.HasEnd
}

// taskPrefixes are the prompt openings the original classified tasks by, in its order.
var taskPrefixes = []struct{ prefix, kind string }{
	{"Build ", "build"}, {"Fix ", "fix"}, {"Update ", "update"}, {"Review ", "review"},
	{"Design ", "design"}, {"Implement ", "implement"},
}

// TaskType classifies a prompt by its first word as the original did: build, fix, update,
// review, design, implement, else other. The match is case-sensitive, like its regexes.
func TaskType(prompt string) string {
	for _, p := range taskPrefixes {
		if strings.HasPrefix(prompt, p.prefix) {
			return p.kind
		}
	}
	return "other"
}

// maxText is the longest text of a record a Bead keeps (a name, a reason, a date): what the
// aggregator holds is then bounded by the number of beads, not by what the records hold (each
// of a thousand records could name an agent of 16 MiB). Longer text is cut, "…" at its end.
const maxText = 256

// clipText is s cut to maxText bytes (at a character boundary) and marked, when longer.
func clipText(s string) string {
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// newBead merges a run with its result (res nil when there is none).
func newBead(name string, run *record.Run, res *record.Result) *Bead {
	b := &Bead{
		ID: clipText(run.Bead), Agent: clipText(run.Agent), Model: clipText(run.Model), Task: TaskType(run.Prompt),
		StartedAt: clipText(run.StartedAt), Attempt: run.Attempt, RunStatus: clipText(run.Status),
		RunSeconds: run.DurationSeconds, Template: DefaultTemplate,
	}
	if b.ID == "" {
		b.ID = name
	}
	if b.Agent == "" {
		b.Agent = Unknown
	}
	if b.Model == "" {
		b.Model = Unknown
	}
	if run.TemplateName != nil && *run.TemplateName != "" {
		b.Template = clipText(*run.TemplateName)
	}
	b.Start, b.HasStart = record.ParseTime(b.StartedAt)
	if run.Verification != nil {
		b.Verified = clipText(run.Verification.Overall)
	}
	if res != nil {
		if res.Verification != nil && res.Verification.Overall != "" {
			b.Verified = clipText(res.Verification.Overall)
		}
		b.HasResult = true
		b.Status = clipText(res.Status)
		b.Reason = clipText(res.Reason)
		if res.FinishedAt != nil {
			b.FinishedAt = clipText(*res.FinishedAt)
		}
		b.Finish, b.HasEnd = record.ParseTime(b.FinishedAt)
		if b.HasStart && b.HasEnd && !b.Finish.Before(b.Start) {
			b.Seconds, b.HasSeconds = int64(b.Finish.Sub(b.Start)/time.Second), true
		}
	}
	return b
}
