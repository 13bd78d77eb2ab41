// Package testenv is for tests only: the world cmd/swarm's and cmd/ralph's testscripts run
// their binaries in, a private swarm (its own $SWARM_DIR and tmux socket directory, whose
// supervisors and tmux servers are killed at the end), a git repository, the Python swarm's
// swarm.py where its mirror is here. No command imports it.
package testenv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv/need"
	"github.com/agentfleet/fleet/internal/testenv/postmortem"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/rogpeppe/go-internal/testscript"
)

// Swarm is a test's private swarm.
type Swarm struct {
	Dir     string // $SWARM_DIR
	SockDir string // TMUX_TMPDIR: even tmux's default server is private

	// t and work, set by NewSwarm: when the script failed, Stop first shows its post-mortem
	// (the logs and states under work, the panes of its tmux servers).
	t    postmortem.TB
	work string
}

// NewSwarm gives the script env a swarm of its own: $SWARM_DIR at $WORK/sd, TMUX_TMPDIR a new
// directory under the system's temp directory named prefix-* (tmux socket paths must be short,
// about 100 bytes: $WORK is too deep), TMUX unset, HOME at $WORK. The caller defers Stop (after
// stopping what it knows of and Stop does not, such as ralph's loop monitors).
func NewSwarm(env *testscript.Env, prefix string) (*Swarm, error) {
	sockDir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	s := &Swarm{Dir: filepath.Join(env.WorkDir, "sd"), SockDir: sockDir, work: env.WorkDir}
	if t, ok := env.T().(postmortem.TB); ok {
		s.t = t
	}
	env.Setenv("TMUX_TMPDIR", sockDir)
	env.Setenv("TMUX", "")
	env.Setenv("SWARM_DIR", s.Dir)
	env.Setenv("HOME", env.WorkDir)
	Mark(env)
	need.Setup(env)
	return s, nil
}

// Stop kills what a test left running in the swarm: every supervisor still registered (its pid
// checked by command line), every tmux server in the socket directory; then removes that
// directory. If the script failed, its post-mortem comes first (PostMortem).
func (s *Swarm) Stop() {
	s.PostMortem()
	layout := supervise.Layout{Dir: statedir.Swarm{Root: s.Dir}.Supervise()}
	for _, name := range layout.Registered(func(string) bool { return true }) {
		if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
			syscall.Kill(e.PID, syscall.SIGKILL)
		}
	}
	socks, _ := filepath.Glob(filepath.Join(s.SockDir, "tmux-*", "*"))
	for _, sock := range socks {
		KillServer(sock)
	}
	os.RemoveAll(s.SockDir)
}

// KillServer kills the tmux server at sock, waiting CommandBound at most: a server that does
// not answer (stopped, or hung) must not hold the test's end.
func KillServer(sock string) {
	ctx, cancel := context.WithTimeout(context.Background(), CommandBound)
	defer cancel()
	(&tmux.Client{Socket: sock}).KillServer(ctx)
}

// PostMortem shows, when the script failed, its post-mortem (postmortem.OnFailure): the logs
// and states under $WORK, the processes they name, the panes of the swarm's tmux servers. A
// caller that stops more than Stop does (ralph's loop monitors) calls it first.
func (s *Swarm) PostMortem() {
	if s.t == nil {
		return
	}
	socks, _ := filepath.Glob(filepath.Join(s.SockDir, "tmux-*", "*"))
	postmortem.OnFailure(s.t, s.work, socks...)
	s.t = nil // once
}

// Mark puts the test binary's mark (sweep.Var) into a script's environment, which testscript
// makes anew: what the script starts (tmux servers, supervisors, agents) is then swept with
// the rest when the binary ends or times out (sweep.Guard), whatever the script's cleanup did.
func Mark(env *testscript.Env) {
	if mark := os.Getenv(sweep.Var); mark != "" {
		env.Setenv(sweep.Var, mark)
	}
}

// GitRepo makes a git repository at dir: branch main, one empty commit, an author of its own.
func GitRepo(dir string) error {
	for _, args := range [][]string{{"init", "-q", "-b", "main", dir}, {"-C", dir, "config", "user.email", "t@example.com"},
		{"-C", dir, "config", "user.name", "t"}, {"-C", dir, "commit", "-q", "--allow-empty", "-m", "init"}} {
		if _, err := git.Run(context.Background(), "", "", args...); err != nil {
			return err
		}
	}
	return nil
}

// PythonSwarm is the path of the Python swarm's swarm.py: $SWARM_PY when set, else the file
// written into dir from its mirror (../../../.mirror/mtomcal+swarm, from a cmd/* package's
// directory), else "" when python3 or the mirror is missing.
func PythonSwarm(dir string) string {
	if _, err := exec.LookPath("python3"); err != nil {
		return ""
	}
	if p := os.Getenv("SWARM_PY"); p != "" {
		return p
	}
	mirror, _ := filepath.Abs("../../../.mirror/mtomcal+swarm/repo")
	out, err := git.Run(context.Background(), mirror, "", "show", "HEAD:swarm.py")
	if err != nil {
		return ""
	}
	p := filepath.Join(dir, "swarm.py")
	if os.WriteFile(p, out, 0o644) != nil {
		return ""
	}
	return p
}

// ExitCode is the scripts' command "exitcode N CMD ARGS...": it runs CMD, which must exit with
// N; its output is kept for stdout and stderr, as exec's.
func ExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N CMD [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}
