package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/workspace"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// cronPath is the PATH cron gives its jobs (Debian's cron, and most others).
const cronPath = "/usr/bin:/bin"

// fleetBinaries are the toolkit's binaries a cron job or a shim calls.
var fleetBinaries = []string{"dispatch", "validate-state", "analyze-runs"}

// doctorCommand is "dispatch doctor": what a dispatch needs, checked one line at a time, so a
// cron job or a new machine can be set right before an agent fails.
func doctorCommand() *cli.Command {
	o := &verbOptions{}
	return verbCommand(&cli.Command{
		Name: "doctor", Usage: "check what a dispatch needs: config, agents' commands, tmux, git, state directory, cron's PATH",
		UsageText: "dispatch doctor [AGENT...]",
		Description: "One line per check: ok, warn (works, but see the note) or FAIL (a dispatch would fail).\n" +
			"An agent whose command is not there is a warning while another agent can run (a machine\n" +
			"that only runs claude needs no codex), a failure when none can; name the agents your\n" +
			"dispatches use (dispatch doctor claude) to check those alone, each a failure when missing.\n" +
			"Nothing is started or written.",
		ExitCodes: []cli.ExitCode{
			{Code: cli.ExitOK, Meaning: "every check passed (warnings allowed)"},
			{Code: cli.ExitFailure, Meaning: "a check failed"},
			{Code: cli.ExitUsage, Meaning: "usage error"},
		},
		Action: func(_ context.Context, c *ucli.Context, std cli.Streams) error {
			d := &doctor{w: std.Out, agents: c.Args().Slice()}
			s, err := o.settings()
			if err != nil {
				d.fail("settings", "%v", err)
			} else {
				d.run(c.Context, s)
			}
			if d.failed > 0 {
				return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("%d check(s) failed", d.failed)}
			}
			return nil
		},
	}, o)
}

// doctor prints the checks' lines and counts the failures.
type doctor struct {
	w      io.Writer
	failed int
	agents []string // the agents to check, each a failure when it cannot run; none: every agent
}

func (d *doctor) line(status, check, format string, args ...any) {
	fmt.Fprintf(d.w, "%-4s %s: %s\n", status, check, fmt.Sprintf(format, args...))
}
func (d *doctor) ok(check, format string, args ...any)   { d.line("ok", check, format, args...) }
func (d *doctor) warn(check, format string, args ...any) { d.line("warn", check, format, args...) }
func (d *doctor) fail(check, format string, args ...any) {
	d.failed++
	d.line("FAIL", check, format, args...)
}

func (d *doctor) run(ctx context.Context, s *settings) {
	// The agents config and each agent's command.
	cfg, err := s.agents()
	switch {
	case err != nil:
		d.fail("config", "%v", err)
	case cfg.Path == "":
		d.ok("config", "no %s here: the built-in agents (%s)", agent.ConfigName, strings.Join(cfg.Names(), ", "))
	default:
		d.ok("config", "%s (%s), valid: agents %s", cfg.Path, configOrigin(s.config), strings.Join(cfg.Names(), ", "))
	}
	if cfg != nil {
		d.agentCommands(ctx, s, cfg)
	}

	// tmux and git.
	for _, bin := range []string{"tmux", "git"} {
		path, err := findCommand(bin, ".", s.getenv("PATH"))
		switch {
		case err == nil:
			d.ok(bin, "%s", path)
		case bin == "tmux" && s.backend == supervise.BackendProcess:
			d.ok(bin, "not installed; not needed with DISPATCH_BACKEND=process")
		case bin == "tmux":
			d.fail(bin, "not found on PATH; install it, or set DISPATCH_BACKEND=process (or pass --no-tmux)")
		default:
			d.fail(bin, "not found on PATH; install it (dispatch needs it for --branch, --worktree and the branch line)")
		}
	}

	d.stateDir(s.stateDir)
	d.socket(ctx, s)
	d.cron()

	// The relay, said once here rather than on every dispatch.
	switch {
	case !s.relay:
		d.ok("relay", "disabled (DISPATCH_USE_RELAY=false)")
	case isExecutable(s.relayBin):
		d.ok("relay", "enabled (%s)", s.relayBin)
	default:
		d.warn("relay", "%s; dispatches run without it (set DISPATCH_RELAY_BIN, or DISPATCH_USE_RELAY=false to say so)", relayUnavailable(s))
	}

	// The workspace and the owner its wake message names.
	ws, err := workspace.Open(s.workspace)
	switch {
	case err != nil:
		d.fail("workspace", "%s: %v", workspaceEnv, err)
	case ws == nil:
		d.ok("workspace", "none (%s is not set): no hooks; the wake message says %q", workspaceEnv, workspace.DefaultInstruction)
	default:
		wc, err := workspace.ReadConfig(s.config.Path)
		if err != nil {
			d.fail("workspace", "%s: %v", s.config.Path, err)
			break
		}
		how := "from USER.md"
		switch {
		case wc.WakeInstruction != "":
			how = "from the config's wake_instruction"
		case wc.Owner != "":
			how = "from the config's workspace.owner"
		case ws.Owner() == "":
			how = "no owner named in USER.md or the config"
		}
		d.ok("workspace", "%s; the wake message says %q (%s)", ws.Root, wc.InstructionIn(ws), how)
	}
}

// agentCommands checks each agent's command: the agents named on the command line, each a
// failure when it cannot run; else every agent of the config, a missing command a warning
// while another agent can run (the config lists agents a machine may never use), a failure
// when none can.
func (d *doctor) agentCommands(ctx context.Context, s *settings, cfg *agent.Config) {
	env := agentEnv(ctx, s, io.Discard)
	names, strict := d.agents, len(d.agents) > 0
	if !strict {
		names = cfg.Names()
	}
	type check struct{ name, path, problem string }
	var checks []check
	usable := 0
	for _, name := range names {
		p, err := cfg.Lookup(name)
		if err != nil {
			checks = append(checks, check{name: name, problem: err.Error()})
			continue
		}
		if problem := commandProblem(p, cfg, env, s.getenv("PATH"), "."); problem != "" {
			checks = append(checks, check{name: name, problem: problem})
			continue
		}
		path, _ := findCommand(p.Command, ".", pathsOf(env, s.getenv("PATH"))...)
		checks = append(checks, check{name: name, path: path})
		usable++
	}
	for _, c := range checks {
		switch {
		case c.problem == "":
			d.ok("agent "+c.name, "%s", c.path)
		case strict || usable == 0:
			d.fail("agent "+c.name, "%s", c.problem)
		default:
			d.warn("agent "+c.name, "%s; a dispatch to it would fail (dispatch doctor %s checks it alone)", c.problem, c.name)
		}
	}
}

func configOrigin(f agent.ConfigFile) string {
	switch f.Origin {
	case agent.FromEnv:
		return "named by " + f.Env
	case agent.FromWorkspace:
		return "the workspace's"
	}
	return "found in the current directory"
}

// stateDir checks that the state directory (or, before the first dispatch, the directory it
// will be made in) is writable, and that a state directory of ours is owned by this user and
// writable by no one else: it holds prompts and the supervisors' control sockets.
func (d *doctor) stateDir(dir string) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		parent := fsx.ExistingAncestor(dir)
		if unix.Access(parent, unix.W_OK|unix.X_OK) != nil {
			d.fail("state directory", "%s does not exist and cannot be made: %s is not writable", dir, parent)
			return
		}
		d.ok("state directory", "%s will be made by the first dispatch (in %s, writable)", dir, parent)
		return
	}
	switch {
	case err != nil:
		d.fail("state directory", "%v", err)
	case fi.Mode()&os.ModeSymlink != 0:
		d.fail("state directory", "%s is a symbolic link; dispatch never follows one when it writes: name the directory itself", dir)
	case !fi.IsDir():
		d.fail("state directory", "%s is not a directory", dir)
	case unix.Access(dir, unix.W_OK|unix.X_OK) != nil:
		d.fail("state directory", "%s is not writable by this user (uid %d)", dir, os.Geteuid())
	default:
		st := fi.Sys().(*syscall.Stat_t)
		switch {
		case int(st.Uid) != os.Geteuid():
			d.fail("state directory", "%s is owned by uid %d, not by this user (uid %d): a dispatch run as another user (cron's, a service's) writes records the owner cannot replace; chown it", dir, st.Uid, os.Geteuid())
		case fi.Mode().Perm()&0o022 != 0:
			d.fail("state directory", "%s is writable by others (mode %04o): anyone could replace its records; chmod go-w %s", dir, fi.Mode().Perm(), dir)
		default:
			d.ok("state directory", "%s (owned by uid %d, mode %04o, writable)", dir, st.Uid, fi.Mode().Perm())
		}
	}
}

// socket checks the tmux socket dispatch uses: its directory, and the server on it.
func (d *doctor) socket(ctx context.Context, s *settings) {
	if s.backend == supervise.BackendProcess {
		d.ok("tmux socket", "not used (DISPATCH_BACKEND=process)")
		return
	}
	fi, err := os.Lstat(s.socket)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if unix.Access(filepath.Dir(s.socket), unix.W_OK|unix.X_OK) != nil {
			d.fail("tmux socket", "%s: its directory is not writable, so no server can be started there; set DISPATCH_TMUX_SOCKET", s.socket)
			return
		}
		d.ok("tmux socket", "%s (no server yet; the first dispatch starts one)", s.socket)
	case err != nil:
		d.fail("tmux socket", "%v", err)
	case fi.Mode()&os.ModeSocket == 0:
		d.fail("tmux socket", "%s is not a socket; remove it, or set DISPATCH_TMUX_SOCKET", s.socket)
	case int(fi.Sys().(*syscall.Stat_t).Uid) != os.Geteuid():
		d.fail("tmux socket", "%s belongs to uid %d; tmux refuses a server of another user: set DISPATCH_TMUX_SOCKET", s.socket, fi.Sys().(*syscall.Stat_t).Uid)
	default:
		sessions, err := s.tmux().ListSessions(ctx)
		if err != nil {
			d.fail("tmux socket", "%s: %v", s.socket, err)
			return
		}
		d.ok("tmux socket", "%s (server up, %d session(s))", s.socket, len(sessions))
	}
}

// cron checks that the toolkit's binaries are where a crontab line finds them: cron's PATH
// has only /usr/bin and /bin, where 'make install' does not put them by default.
func (d *doctor) cron() {
	var missing, found []string
	for _, bin := range fleetBinaries {
		if p, err := findCommand(bin, "/", cronPath); err == nil {
			found = append(found, p)
		} else {
			missing = append(missing, bin)
		}
	}
	sort.Strings(missing)
	if len(missing) == 0 {
		d.ok("cron's PATH", "%s finds %s", cronPath, strings.Join(found, ", "))
		return
	}
	self := ""
	if exe, err := os.Executable(); err == nil {
		self = filepath.Dir(exe)
	}
	d.warn("cron's PATH", "%s has no %s; in a crontab, set PATH=%s:%s, or call the shims with FLEET_BIN=%s (docs/cron.md)",
		cronPath, strings.Join(missing, ", "), self, cronPath, self)
}
