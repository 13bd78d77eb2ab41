package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	ucli "github.com/urfave/cli/v2"
)

// What the verbs of AIWG's loops share: the workspace of the current directory, the loop a
// verb names, the Runtime a loop's processes are given, the flags' values read as AIWG read
// them. Their help is the hand-written text they always had (cli.Command.Help), their errors
// the tool's; none of them lets the tool catch SIGINT or SIGTERM (OwnSignals): a controller
// catches its own (aiwg.Workspace.RunLoop), the others end on them as they always did.

// The hidden forms of `ralph start`, run by ralph itself: a background loop's controller, and
// an iteration's supervisor (attempt.Supervise). They live under "start" because ralph's
// routing gave AIWG that verb; the supervisor's is supervise.SuperviseVerb, which a live
// supervisor's command line must hold (supervise.SupervisorAlive).
const (
	controllerVerb = "__run"
	supervisorVerb = supervise.SuperviseVerb
)

// workspace is the workspace of the current directory (aiwg.FindWorkspace), AIWG's legacy
// current-loop.json taken in first (aiwg.Workspace.MigrateLegacy: once, a Lstat when there is
// none), so every verb sees that loop as any other. A legacy file that cannot be taken in is
// an error that says so.
func workspace() (aiwg.Workspace, error) {
	ws, err := workspaceHere()
	if err != nil {
		return ws, err
	}
	_, err = ws.MigrateLegacy(context.Background(), aiwg.Runtime{SealDir: sealDir()}, defaultAgent)
	return ws, err
}

// workspaceHere is the workspace of the current directory, as it is.
func workspaceHere() (aiwg.Workspace, error) {
	wd, err := os.Getwd()
	if err != nil {
		return aiwg.Workspace{}, err
	}
	return aiwg.FindWorkspace(wd), nil
}

// sealDir is where the loops' seals are kept, outside every workspace: $SWARM_DIR/aiwg, made
// absolute ("" when $SWARM_DIR cannot be told).
func sealDir() string {
	sw, err := statedir.SwarmFromEnv(os.LookupEnv)
	if err != nil {
		return ""
	}
	root, err := filepath.Abs(sw.Root)
	if err != nil {
		return ""
	}
	return filepath.Join(root, "aiwg")
}

// loopIDFlag is --loop-id, AIWG's spelling of a control verb's operand, writing into *id.
func loopIDFlag(id *string) ucli.Flag { return &ucli.StringFlag{Name: "loop-id", Destination: id} }

// namedLoop is the workspace and the loop a verb names: its operand, or --loop-id (loopID);
// with neither, the workspace's one active loop, as AIWG chose it (aiwg.Workspace.ActiveLoop).
func namedLoop(ctx context.Context, c *ucli.Context, loopID string) (aiwg.Workspace, string, error) {
	ws, err := workspace()
	if err != nil {
		return ws, "", err
	}
	ops := c.Args().Slice()
	id := loopID
	if len(ops) > 0 {
		if id != "" && id != ops[0] {
			return ws, "", cli.Usagef("two loops named: %s and --loop-id %s", ops[0], id)
		}
		id = ops[0]
	}
	if len(ops) > 1 {
		return ws, "", cli.Usagef("one loop id at a time; got %q", strings.Join(ops, " "))
	}
	if id == "" {
		id, err = ws.ActiveLoop(ctx)
		return ws, id, err
	}
	if !aiwg.IsLoopID(id) {
		return ws, "", cli.Usagef("%q is not a loop id (ralph-<slug>-<8 hex>); 'ralph list' shows them", id)
	}
	return ws, id, ws.Exists(id)
}

// positive reads the whole-number flag name, v as given (at least 1); def when it is not given.
func positive(name string, f givenString, def int) (int, error) {
	if !f.given {
		return def, nil
	}
	v := f.value
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, cli.Usagef("--%s %q: give a whole number of at least 1", name, v)
	}
	return n, nil
}

// givenString is a string flag's value and whether it was given (AIWG's flags are read as
// typed, and a default tells nothing of whether the user gave one).
type givenString struct {
	value string
	given bool
}

// flag is the string flag name writing into f.
func (f *givenString) flag(name string) *ucli.StringFlag {
	return &ucli.StringFlag{Name: name, Destination: &f.value, Action: cli.Given[string](&f.given)}
}

// parseTimeout reads --timeout: a Go duration (90s, 30m, 1h30m), or bare minutes as AIWG's
// --timeout took them; 0 or "none" for no timeout.
func parseTimeout(v string) (time.Duration, error) {
	if v == "none" || v == "0" {
		return 0, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Minute, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return 0, cli.Usagef("--timeout %q: give minutes or a duration like 90s, 30m, 1h30m (none: no timeout)", v)
	}
	return d.Truncate(time.Second), nil
}

// runtime is what a loop's processes are given from this one: the agents config
// (resolveAgent), this program's hidden verbs (proc.Self), the environment; the controller's
// lines go to log, warnings to stderr in the tool's dialect.
func runtime(ws aiwg.Workspace, log, stderr io.Writer) (aiwg.Runtime, error) {
	exe, err := proc.Self()
	if err != nil {
		return aiwg.Runtime{}, err
	}
	env := os.Environ()
	// The loops' seals (their completion commands, outside every workspace) are in
	// $SWARM_DIR/aiwg; the controller runs in the workspace, so a relative $SWARM_DIR is
	// given to it absolute.
	sealDir := ""
	if sw, err := statedir.SwarmFromEnv(os.LookupEnv); err == nil {
		if root, err := filepath.Abs(sw.Root); err == nil {
			sealDir = filepath.Join(root, "aiwg")
			if _, set := os.LookupEnv("SWARM_DIR"); set && root != sw.Root {
				env = append(env, "SWARM_DIR="+root)
			}
		}
	}
	return aiwg.Runtime{
		SealDir:    sealDir,
		Agent:      func(spec string) (*agent.Profile, agent.Model, error) { return resolveAgent(ws, spec) },
		Controller: []string{exe, "start", controllerVerb},
		Supervisor: func(stateDir string) []string {
			return []string{exe, "start", supervisorVerb, "--state-dir", stateDir}
		},
		Env:  env,
		Log:  log,
		Warn: func(msg string) { fmt.Fprintf(stderr, "%s: warning: %s\n", tool, msg) },
	}, nil
}

// resolveAgent is --agent's profile and model (AGENT[:MODEL], agent.ParseSpec) from the
// workspace's agents config (agent.FindConfig's order, the workspace as the tool's directory),
// read again at each call.
func resolveAgent(ws aiwg.Workspace, spec string) (*agent.Profile, agent.Model, error) {
	cfg, err := agent.LoadConfig(os.LookupEnv, ws.Root)
	if errors.Is(err, agent.ErrConfigEnvEmpty) {
		return nil, agent.Model{}, cli.Usagef("%v", err)
	}
	if err != nil {
		return nil, agent.Model{}, err
	}
	name, model, err := agent.ParseSpec(spec)
	if errors.Is(err, agent.ErrEmptyModel) {
		return nil, agent.Model{}, cli.Usagef("empty model after the colon in --agent %q; give AGENT:MODEL or AGENT", spec)
	}
	p, err := cfg.Lookup(name)
	if err != nil {
		return nil, agent.Model{}, cli.Usagef("--agent: %v", err)
	}
	return p, p.Model(model, os.Getenv), nil
}

// foregroundResult is a foreground controller's exit: 0 only for completed.
func foregroundResult(status string, err error) error {
	if err != nil {
		return err
	}
	if status == aiwg.StatusCompleted {
		return nil
	}
	return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("the loop ended %s", status)}
}
