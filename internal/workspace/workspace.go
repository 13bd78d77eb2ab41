// Package workspace is the directory dispatch.sh lived in (an athena workspace): scripts/,
// config/, state/ and memory/. dispatch.sh ran the workspace's own scripts around each agent,
// when they were there and executable, and so does dispatch when it runs for a workspace:
//
// Before the launch, in this order, each refusing the launch when it fails (dispatch exits with
// the script's exit status, as dispatch.sh did under set -e):
//
//	scripts/lint-no-hidden-workspace.sh
//	scripts/agent-preflight.sh AGENT REPO
//	scripts/prd-lint.sh                 only while DISPATCH_ENFORCE_PRD_LINT is "true" (the
//	                                    default); a failure prints "PRD governance check
//	                                    failed. Dispatch blocked." and the report, exit 1
//
// When the attempt ends, from its supervisor:
//
//	scripts/verify.sh REPO BEAD         before the final records: its JSON's checks fill the
//	                                    records' verification, and the JSON is kept as
//	                                    state/results/BEAD-verify.json
//	scripts/validate-state.sh --runs RUN --results RESULT    after them, advisory
//	memory/YYYY-MM-DD.md                a line appended (UTC day, "# YYYY-MM-DD" header first)
//	scripts/wake-gateway.sh MESSAGE     wakes the orchestrator waiting for the agent
//
// The message is dispatch.sh's: "Agent BEAD STATUS (Ns, AGENT/MODEL, attempt A/M, reason:
// REASON[, truthsayer: N issues]). Check state/results/BEAD.json and INSTRUCTION." The
// instruction, which named the workspace's owner in dispatch.sh, comes from the "workspace"
// object of config/agents.json (Config), else names the person USER.md names (Owner). A hook that fails after the records are written, a
// failed wake or memory line included, is reported on the supervisor's console and changes
// nothing.
//
// Two integrations of dispatch.sh are outside the workspace, found by the environment: the
// relay (Relay: DISPATCH_RELAY_BIN, default $HOME/go/bin/relay, messages to
// DISPATCH_RELAY_ORCHESTRATOR_AGENT, default athena) and Truthsayer (TRUTHSAYER_BIN, default
// $HOME/truthsayer/truthsayer), which watches the repository while the agent works.
//
// Every script and binary gets its arguments as an argv, never through a shell, and runs with a
// time limit (Command).
package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"golang.org/x/sys/unix"
)

// The workspace's scripts dispatch runs.
const (
	ScriptLintHidden    = "lint-no-hidden-workspace.sh"
	ScriptPreflight     = "agent-preflight.sh"
	ScriptPRDLint       = "prd-lint.sh"
	ScriptVerify        = "verify.sh"
	ScriptValidateState = "validate-state.sh"
	ScriptWake          = "wake-gateway.sh"
)

// Workspace is a workspace directory: Root holds scripts/, config/, state/ and memory/.
type Workspace struct {
	Root string
}

// Open returns the workspace at root, which must be a directory; root "" is no workspace (nil).
func Open(root string) (*Workspace, error) {
	if root == "" {
		return nil, nil
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", root)
	}
	return &Workspace{Root: abs}, nil
}

// Script is the path of the workspace's script name.
func (w *Workspace) Script(name string) string { return filepath.Join(w.Root, "scripts", name) }

// Hook returns the path of the script name when the workspace has it and it is executable (the
// shell's test -x, which is how dispatch.sh decided to run one), else "".
func (w *Workspace) Hook(name string) string {
	if w == nil {
		return ""
	}
	p := w.Script(name)
	if !Executable(p) {
		return ""
	}
	return p
}

// Memory is the workspace's memory file of the UTC day of t: memory/YYYY-MM-DD.md.
func (w *Workspace) Memory(t time.Time) string {
	return filepath.Join(w.Root, "memory", t.UTC().Format(time.DateOnly)+".md")
}

// Owner is the workspace's owner as the workspace itself names its person: the "What to call
// them" line of USER.md (an OpenClaw workspace's profile of its human, "- **What to call
// them:** Perttu"), else its "Name" line; "" when there is no such file or line, or the line
// is still the template's blank. dispatch.sh's wake message named this person ("message Perttu
// with the result summary"), so a workspace adopted with its config as it was keeps it.
func (w *Workspace) Owner() string {
	if w == nil {
		return ""
	}
	b, err := fsx.ReadFileLimit(filepath.Join(w.Root, "USER.md"), maxUserFile)
	if err != nil {
		return ""
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := userField.FindStringSubmatch(line); m != nil {
			if key := strings.ToLower(m[1]); fields[key] == "" {
				fields[key] = m[2]
			}
		}
	}
	for _, key := range []string{"what to call them", "name"} {
		if v := fields[key]; ownerName.MatchString(v) {
			return v
		}
	}
	return ""
}

// maxUserFile bounds USER.md: a page about a person, not a data set.
const maxUserFile = 1 << 20

// userField is a line of USER.md's list: "- **Name:** Perttu", the key lowercased by (?i) only
// for matching; ownerName is a value that names someone: no template blank ("", "_(optional)_"),
// no markup, one short line.
var (
	userField = regexp.MustCompile(`^\s*[-*]\s*\*\*(?i:(what to call them|name)):?\*\*:?\s*(.*?)\s*$`)
	ownerName = regexp.MustCompile(`^[^\x00-\x1f\x7f_*(\[<>` + "`" + `][^\x00-\x1f\x7f*<>` + "`" + `]{0,63}$`)
)

// Executable reports whether path is a file this process may execute (test -x, but not for a
// directory, which test -x accepts and exec refuses).
func Executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && unix.Access(path, unix.X_OK) == nil
}

// Config is the "workspace" object of config/agents.json: the settings of the workspace's hooks.
//
//	"workspace": {"owner": "Perttu"}
//	"workspace": {"wake_instruction": "message Perttu with the result summary"}
//	"workspace": {"run_test_cmd": true}
type Config struct {
	// WakeInstruction closes the wake message, after "Check state/results/BEAD.json and ".
	WakeInstruction string `json:"wake_instruction"`
	// Owner, when WakeInstruction is not set, makes it "message OWNER with the result summary",
	// dispatch.sh's words.
	Owner string `json:"owner"`
	// RunTestCmd makes dispatch run the repository's repos.<path>.test_cmd after each agent
	// (as --verify would) to fill verification. Off unless set: dispatch.sh never read repos
	// (the workspace's verify.sh runs the tests), so a config kept as it was runs nothing more.
	RunTestCmd bool `json:"run_test_cmd"`
}

// DefaultInstruction closes the wake message when the config names neither an instruction nor
// an owner.
const DefaultInstruction = "report the result summary"

// InstructionIn is the wake message's closing instruction for a workspace w (nil: none): the
// config's, else one naming w's Owner, else DefaultInstruction.
func (c Config) InstructionIn(w *Workspace) string {
	if c.WakeInstruction == "" && c.Owner == "" {
		c.Owner = w.Owner()
	}
	return c.Instruction()
}

// Instruction is the wake message's closing instruction.
func (c Config) Instruction() string {
	switch {
	case c.WakeInstruction != "":
		return c.WakeInstruction
	case c.Owner != "":
		return fmt.Sprintf("message %s with the result summary", c.Owner)
	}
	return DefaultInstruction
}

// maxConfig bounds the agents config, as its own reader bounds it.
const maxConfig = 1 << 20

// ReadConfig reads the "workspace" object of the agents config at path. A missing file or
// object is the zero Config: the agents config's own reader reports a file that must exist.
func ReadConfig(path string) (Config, error) {
	var c Config
	b, err := fsx.ReadFileLimit(path, maxConfig) // a regular file only: a FIFO hangs nothing
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("agents config %s: %w", path, err)
	}
	var top struct {
		Workspace *Config `json:"workspace"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return c, fmt.Errorf("agents config %s: %w", path, err)
	}
	if top.Workspace != nil {
		c = *top.Workspace
	}
	return c, nil
}
