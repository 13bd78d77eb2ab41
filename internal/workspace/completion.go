package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// Hooks is what an attempt's supervisor needs to run the workspace's completion hooks and
// dispatch.sh's integrations; it travels in the attempt's spec. The zero Hooks runs nothing.
type Hooks struct {
	// Root is the workspace; "" when dispatch runs for none (then only the relay and
	// Truthsayer, which the environment names, apply).
	Root string `json:"root,omitempty"`
	// Instruction closes the wake message (Config.Instruction).
	Instruction string `json:"instruction,omitempty"`
	// Relay is the relay to tell, when it is enabled and its binary is there.
	Relay *Relay `json:"relay,omitempty"`
	// Truthsayer is the Truthsayer watcher dispatch started for the attempt, to stop when the
	// agent ends.
	Truthsayer *Watcher `json:"truthsayer,omitempty"`
}

func (h *Hooks) workspace() *Workspace {
	if h == nil || h.Root == "" {
		return nil
	}
	return &Workspace{Root: h.Root}
}

// Outcome is an attempt's end as the memory line and the wake message tell it.
type Outcome struct {
	Bead, Agent, Model  string
	Status, Reason      string
	Duration            int64 // seconds
	Attempt, MaxRetries int
}

// OutcomeOf is the outcome a result record tells, with the run's model (the model as given).
func OutcomeOf(res *record.Result, model string) Outcome {
	o := Outcome{Bead: res.Bead, Agent: res.Agent, Model: model, Status: res.Status, Reason: res.Reason,
		Attempt: res.Attempt, MaxRetries: res.MaxRetries}
	if res.DurationSeconds != nil {
		o.Duration = *res.DurationSeconds
	}
	return o
}

// MemoryLine is dispatch.sh's line in memory/YYYY-MM-DD.md, newline included.
func MemoryLine(o Outcome) string {
	return fmt.Sprintf("- Bead `%s`: agent=%s model=%s attempt=%d/%d status=%s duration=%ds reason=%s\n",
		o.Bead, o.Agent, o.Model, o.Attempt, o.MaxRetries, o.Status, o.Duration, o.Reason)
}

// WakeMessage is dispatch.sh's message to the orchestrator, with findings Truthsayer issues
// (mentioned when there are any) and the closing instruction ("" is DefaultInstruction).
func WakeMessage(o Outcome, findings int, instruction string) string {
	ts := ""
	if findings > 0 {
		ts = fmt.Sprintf(", truthsayer: %d issues", findings)
	}
	if instruction == "" {
		instruction = DefaultInstruction
	}
	return fmt.Sprintf("Agent %s %s (%ds, %s/%s, attempt %d/%d, reason: %s%s). Check state/results/%s.json and %s.",
		o.Bead, o.Status, o.Duration, o.Agent, o.Model, o.Attempt, o.MaxRetries, o.Reason, ts, o.Bead, instruction)
}

// AppendMemory appends line to the memory file of now's UTC day, which starts with a
// "# YYYY-MM-DD" header and a blank line, as dispatch.sh kept it.
func (w *Workspace) AppendMemory(now time.Time, line string) error {
	path := w.Memory(now)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		// The header is written to a temp file and linked into place, which fails if the file
		// is there by now: two supervisors finishing at once neither write it twice nor append
		// a line before it.
		if err := createWith(path, fmt.Sprintf("# %s\n\n", now.UTC().Format(time.DateOnly))); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	// One write: appends of several processes do not interleave.
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// createWith creates path holding text, unless it exists.
func createWith(path, text string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(text)
	if err == nil {
		err = tmp.Chmod(0o644) // a note for people and agents, not a secret: as the shell made it
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// verifyOutputLimit bounds the verify.sh output kept.
const verifyOutputLimit = 4 << 20

// Verify runs the workspace's verify.sh DIR BEAD, if it has one, and returns its JSON output
// and the verification it makes for the records (ParseVerify). Both are nil when there is no
// verify.sh or it failed: dispatch.sh then recorded a null verification. Its error output and
// what went wrong go to console.
func (h *Hooks) Verify(ctx context.Context, dir, bead string, env []string, console io.Writer) ([]byte, *record.Verification) {
	path := h.workspace().Hook(ScriptVerify)
	if path == "" {
		return nil, nil
	}
	fmt.Fprintf(console, "\r\nsupervisor: %s %s %s\r\n", path, dir, bead)
	out := &capture{limit: verifyOutputLimit}
	c := Command{Path: path, Args: []string{dir, bead}, Dir: h.Root, Env: env, Stdout: out, Stderr: console,
		Timeout: VerifyTimeout}
	code, err := c.Run(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(console, "supervisor: %s: %v; no verification recorded\r\n", ScriptVerify, err)
		return nil, nil
	case code != 0:
		fmt.Fprintf(console, "supervisor: %s exited %d; no verification recorded\r\n", ScriptVerify, code)
		return nil, nil
	}
	b := out.buf.Bytes()
	v, err := ParseVerify(b)
	if err != nil {
		fmt.Fprintf(console, "supervisor: %s: %v; no verification recorded\r\n", ScriptVerify, err)
		return nil, nil
	}
	return b, v
}

// ParseVerify maps verify.sh's JSON onto the records' verification: its checks' lint, tests,
// ubs and lint_details (which dispatch.sh copied into the records), and its overall verdict.
// Values the records' schema does not allow are left out, but for tests "timeout", which is
// recorded as "fail". The checks the records have no field for (truthsayer, prd_governance and
// their details) are kept only in the verify file. Output without checks is no verification
// (nil), as dispatch.sh's jq '.checks' made it null.
func ParseVerify(b []byte) (*record.Verification, error) {
	var doc struct {
		Checks *struct {
			Lint        string          `json:"lint"`
			Tests       string          `json:"tests"`
			UBS         string          `json:"ubs"`
			LintDetails json.RawMessage `json:"lint_details"`
		} `json:"checks"`
		Overall string `json:"overall"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("its output is not JSON: %w", err)
	}
	if doc.Checks == nil {
		return nil, nil
	}
	c := doc.Checks
	tests := c.Tests
	if tests == "timeout" {
		tests = "fail"
	}
	v := &record.Verification{
		Lint:    oneOf(c.Lint, "pass", "fail", "skipped"),
		Tests:   oneOf(tests, "pass", "fail", "skipped"),
		UBS:     oneOf(c.UBS, "clean", "issues", "skipped"),
		Overall: oneOf(doc.Overall, "pass", "fail"),
	}
	if d := c.LintDetails; len(d) > 0 && d[0] == '[' {
		v.LintDetails = d
	}
	return v, nil
}

func oneOf(v string, allowed ...string) string {
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	return ""
}

// Validate runs the workspace's validate-state.sh --runs RUN --results RESULT, advisory: its
// verdict changes nothing, as under dispatch.sh.
func (h *Hooks) Validate(ctx context.Context, runFile, resultFile string, env []string, console io.Writer) {
	path := h.workspace().Hook(ScriptValidateState)
	if path == "" {
		return
	}
	h.advise(ctx, Command{Path: path, Args: []string{"--runs", runFile, "--results", resultFile}, Env: env,
		Stdout: console, Stderr: console}, console)
}

// Announce tells the outcome: a line in the workspace's memory file, then the wake message to
// the relay's orchestrator and to the workspace's wake-gateway.sh. findings is the number of
// Truthsayer issues. Nothing that fails here changes anything: it is reported on console.
func (h *Hooks) Announce(ctx context.Context, o Outcome, findings int, now time.Time, env []string, console io.Writer) {
	if h == nil {
		return
	}
	if w := h.workspace(); w != nil {
		if err := w.AppendMemory(now, MemoryLine(o)); err != nil {
			fmt.Fprintf(console, "supervisor: memory: %v\r\n", err)
		}
	}
	msg := WakeMessage(o, findings, h.Instruction)
	if h.Relay != nil {
		h.Relay.Wake(ctx, o.Bead, msg, env, console)
	}
	if path := h.workspace().Hook(ScriptWake); path != "" {
		h.advise(ctx, Command{Path: path, Args: []string{msg}, Env: env, Stdout: console, Stderr: console}, console)
	}
}

// advise runs a script whose failure is only reported.
func (h *Hooks) advise(ctx context.Context, c Command, console io.Writer) {
	c.Dir = h.Root
	name := filepath.Base(c.Path)
	code, err := c.Run(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(console, "supervisor: %s: %v\r\n", name, err)
	case code != 0:
		fmt.Fprintf(console, "supervisor: %s exited %d\r\n", name, code)
	}
}
