package aiwg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/cli"
)

// Hidden forms of `ralph start`, run by ralph itself: a background loop's controller, and an
// iteration's supervisor (attempt.Supervise). They live under "start" because that verb is this
// package's in ralph's routing; supervisorVerb is supervise.SuperviseVerb, which a live
// supervisor's command line must hold (supervise.SupervisorAlive).
const (
	controllerVerb = "__run"
)

// flagSpec describes one flag: whether it takes a value.
type flagSpec map[string]bool

// parseArgs splits args into flags (--name value, --name=value, or a boolean --name) and
// operands, in any order; "--" ends the flags. An unknown flag is a usage error.
func parseArgs(args []string, spec flagSpec) (map[string]string, []string, error) {
	flags := map[string]string{}
	var ops []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			ops = append(ops, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takes, ok := spec[name]
		if !ok {
			return nil, nil, cli.Usagef("unknown flag %s; see 'ralph help'", a)
		}
		switch {
		case takes && !hasVal:
			if i+1 >= len(args) {
				return nil, nil, cli.Usagef("flag %s needs a value", a)
			}
			i++
			val = args[i]
		case !takes && hasVal:
			return nil, nil, cli.Usagef("flag --%s takes no value", name)
		case !takes:
			val = "true"
		}
		flags[name] = val
	}
	return flags, ops, nil
}

// usages are the verbs' --help texts.
var usages = map[string]string{
	"start": `ralph start "TASK" --completion "CMD" [options] - run TASK with an agent until CMD exits 0

Options:
   --completion, -c CMD       the command that exits 0 when the task is done (required); plain
                              words run as they are, shell syntax through /bin/sh -c
   --max-iterations N         at most N iterations (200)
   --timeout DUR              the loop's time: 90s, 30m, 1h30m, bare minutes, or none (60m)
   --checkpoint-interval N    a checkpoint every N iterations (1)
   --agent AGENT[:MODEL]      an agent of the agents config (CONFIG_FILE) (claude)
   --force                    start even with 4 loops active in the workspace
   --foreground               run here until the loop ends; exit 0 only for completed

The loop lives in .aiwg/ralph/loops/<loop_id>/; each iteration's run and result records in
$STATE_DIR, else .aiwg/ralph/state. Exit status: 0 ok, 1 failure, 2 usage error.
`,
	"abort": `ralph abort [LOOP_ID] [--revert | --keep-changes] - end a loop; stop its agent

   --revert          reset the working tree to where the loop started
   --keep-changes    leave the working tree as the agent left it (the default)
`,
	"report": `ralph report [LOOP_ID] [--format text|markdown|json] - a loop's iterations, time, cost and checks
`,
	"list": `ralph list [--json] - AIWG's loops of this workspace and swarm's loops ($SWARM_DIR)
`,
	"status": `ralph status LOOP_ID [--json] - an AIWG loop's state (--json: its state.json)
`,
	"pause": `ralph pause LOOP_ID - stop the iteration in flight; no other starts until ralph resume
`,
	"resume": `ralph resume LOOP_ID [--max-iterations N] [--timeout DUR] [--force] [--foreground]
   continue a paused loop, or a crashed one from its last checkpoint
`,
}

// wantsHelp reports whether args ask for a verb's help.
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--help" || a == "-h" {
			return true
		}
	}
	return false
}

// Run runs the verb args[1] (args[0] is "ralph") and returns the exit status.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	tool := "ralph"
	if len(args) < 2 {
		return cli.Exit(tool, cli.Usagef("no verb; see 'ralph help'"), stderr)
	}
	ctx := context.Background()
	verb, rest := args[1], args[2:]
	if u, ok := usages[verb]; ok && wantsHelp(rest) {
		fmt.Fprint(stdout, u)
		return cli.ExitOK
	}
	var err error
	switch {
	case verb == "start" && len(rest) > 0 && rest[0] == supervisorVerb:
		err = runSupervisor(ctx, rest[1:])
	case verb == "start" && len(rest) > 0 && rest[0] == controllerVerb:
		err = runController(ctx, rest[1:], stderr)
	case verb == "start":
		err = startCmd(ctx, rest, stdout, stderr)
	case verb == "status":
		err = statusCmd(ctx, rest, stdout)
	case verb == "list":
		err = listCmd(ctx, rest, stdout, stderr)
	case verb == "report":
		err = reportCmd(ctx, rest, stdout)
	case verb == "pause":
		err = pauseCmd(ctx, rest, stdout)
	case verb == "resume":
		err = resumeCmd(ctx, rest, stdout, stderr)
	case verb == "abort":
		err = abortCmd(ctx, rest, stdout, stderr)
	default:
		err = cli.Usagef("unknown verb %q", verb)
	}
	return cli.Exit(tool, err, stderr)
}

// workspace is the directory whose .aiwg/ralph holds the loops: the top of the git repository
// the caller is in (the nearest directory with a .git, so a loop started from a subdirectory
// counts toward the same limit; found without running git, which would cost ralph status a
// few milliseconds), else the current directory, as AIWG used it.
func workspace(ctx context.Context) (Workspace, error) {
	wd, err := os.Getwd()
	if err != nil {
		return Workspace{}, err
	}
	for dir := wd; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return Workspace{Root: dir}, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return Workspace{Root: wd}, nil
		}
		dir = parent
	}
}

// agentsConfig is the agents config as dispatch reads it: CONFIG_FILE when set (it must exist),
// else ./config/agents.json of the workspace, else the built-in claude and codex.
func agentsConfig(ws Workspace) (*agent.Config, error) {
	if v, ok := os.LookupEnv("CONFIG_FILE"); ok {
		if v == "" {
			return nil, cli.Usagef("CONFIG_FILE is set but empty; name the agents config, or unset it")
		}
		cfg, err := agent.Load(v)
		if err != nil {
			return nil, fmt.Errorf("%w; CONFIG_FILE names it: point it at the agents config, or unset it", err)
		}
		return cfg, nil
	}
	cfg, err := agent.Load(filepath.Join(ws.Root, "config", "agents.json"))
	if errors.Is(err, agent.ErrNoConfig) {
		return agent.Builtin(), nil
	}
	return cfg, err
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

func positiveFlag(flags map[string]string, name string, def int) (int, error) {
	v, ok := flags[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, cli.Usagef("--%s %q: give a whole number of at least 1", name, v)
	}
	return n, nil
}

// self is the command line that runs this binary again: os.Args[0] made absolute, not
// os.Executable, which resolves links (a binary installed under another name, or a multi-call
// test binary, must be started by the name it was started with).
func self() (string, error) {
	arg0 := os.Args[0]
	if !strings.Contains(arg0, string(os.PathSeparator)) {
		p, err := exec.LookPath(arg0)
		if err != nil {
			return os.Executable()
		}
		arg0 = p
	}
	return filepath.Abs(arg0)
}

// namedLoop is the workspace (of the current directory) and the loop a verb names (loopArg).
func namedLoop(ctx context.Context, flags map[string]string, ops []string) (Workspace, string, error) {
	ws, err := workspace(ctx)
	if err != nil {
		return ws, "", err
	}
	id, err := loopArg(ctx, ws, flags, ops)
	return ws, id, err
}

// sweptLoop is namedLoop after a look at the loop (Sweep): one whose controller died is
// recorded as crashed before a control verb judges it.
func sweptLoop(ctx context.Context, flags map[string]string, ops []string) (Workspace, string, error) {
	ws, id, err := namedLoop(ctx, flags, ops)
	if err == nil {
		err = ws.Sweep(ctx, []string{id})
	}
	return ws, id, err
}

// loopArg is the loop a control verb names: its operand, or --loop-id (AIWG's spelling); with
// neither, the one active loop of the workspace, as AIWG chose it.
func loopArg(ctx context.Context, ws Workspace, flags map[string]string, ops []string) (string, error) {
	id := flags["loop-id"]
	if len(ops) > 0 {
		if id != "" && id != ops[0] {
			return "", cli.Usagef("two loops named: %s and --loop-id %s", ops[0], id)
		}
		id = ops[0]
	}
	if len(ops) > 1 {
		return "", cli.Usagef("one loop id at a time; got %q", strings.Join(ops, " "))
	}
	if id != "" {
		if !IsLoopID(id) {
			return "", cli.Usagef("%q is not a loop id (ralph-<slug>-<8 hex>); 'ralph list' shows them", id)
		}
		if _, err := os.Lstat(ws.StatePath(id)); err != nil {
			return "", &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("no loop %s in %s; 'ralph list' shows the loops", id, ws.Dir())}
		}
		return id, nil
	}
	ws.Sweep(ctx, ws.Loops())
	reg, err := ws.readRegistry()
	if err != nil {
		return "", err
	}
	switch len(reg.ActiveLoops) {
	case 0:
		return "", fmt.Errorf("no active loop in %s; name one ('ralph list' shows them)", ws.Root)
	case 1:
		return reg.ActiveLoops[0].LoopID, nil
	}
	return "", fmt.Errorf("multiple ralph loops active (%d); name one: %s", len(reg.ActiveLoops), activeIDs(reg))
}

func activeIDs(reg *Registry) string {
	var ids []string
	for _, e := range reg.ActiveLoops {
		ids = append(ids, e.LoopID)
	}
	return strings.Join(ids, ", ")
}
