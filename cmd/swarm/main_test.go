package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarmcli"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/rogpeppe/go-internal/testscript"
)

// tool is the name testscript gives the test binary on PATH.
const tool = "swarm"

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		tool: func() { os.Exit(swarmcli.Run(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// testEnv gives every script its own $SWARM_DIR, its own tmux socket directory (TMUX_TMPDIR,
// so even tmux's default server is private; every server in it is killed at the end, and every
// supervisor still registered), $AGENT (testdata/agent.sh), a git repository at $WORK/repo, and
// $SWARM_PY when the Python swarm's mirror is here.
func testEnv(env *testscript.Env) error {
	agent, _ := filepath.Abs("testdata/agent.sh")
	// tmux socket paths must be short (about 100 bytes): $WORK is too deep.
	sockDir, err := os.MkdirTemp("", "swm")
	if err != nil {
		return err
	}
	swarmDir := filepath.Join(env.WorkDir, "sd")
	env.Defer(func() {
		layout := supervise.Layout{Dir: statedir.Swarm{Root: swarmDir}.Supervise()}
		for _, name := range layout.Registered(func(string) bool { return true }) {
			if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
				syscall.Kill(e.PID, syscall.SIGKILL)
			}
		}
		socks, _ := filepath.Glob(filepath.Join(sockDir, "tmux-*", "*"))
		for _, s := range socks {
			(&tmux.Client{Socket: s}).KillServer(context.Background())
		}
		os.RemoveAll(sockDir)
	})
	env.Setenv("TMUX_TMPDIR", sockDir)
	env.Setenv("TMUX", "")
	env.Setenv("SWARM_DIR", swarmDir)
	env.Setenv("AGENT", agent)
	env.Setenv("HOME", env.WorkDir)
	repo := filepath.Join(env.WorkDir, "repo")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "config", "user.email", "t@example.com"},
		{"-C", repo, "config", "user.name", "t"}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			return &gitError{args, string(out)}
		}
	}
	env.Setenv("SWARM_PY", pythonSwarm(env.WorkDir))
	gitBin, _ := exec.LookPath("git")
	env.Setenv("GITBIN", gitBin)
	swarmBin, _ := exec.LookPath(tool) // testscript puts the test binary on PATH as swarm
	env.Setenv("SWARMBIN", swarmBin)
	return nil
}

type gitError struct {
	args []string
	out  string
}

func (e *gitError) Error() string { return "git " + strings.Join(e.args, " ") + ": " + e.out }

// pythonSwarm writes the Python swarm's swarm.py from its mirror into dir and returns its path,
// or "" when python3 or the mirror is missing.
func pythonSwarm(dir string) string {
	if _, err := exec.LookPath("python3"); err != nil {
		return ""
	}
	if p := os.Getenv("SWARM_PY"); p != "" {
		return p
	}
	mirror, _ := filepath.Abs("../../../.mirror/mtomcal+swarm/repo")
	out, err := exec.Command("git", "-C", mirror, "show", "HEAD:swarm.py").Output()
	if err != nil {
		return ""
	}
	p := filepath.Join(dir, "swarm.py")
	if os.WriteFile(p, out, 0o644) != nil {
		return ""
	}
	return p
}

var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	// waitscreen NAME REGEXP [SECONDS]: wait until the worker's screen (as peek shows it) matches.
	"waitscreen": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: waitscreen NAME REGEXP [SECONDS]")
		}
		re := regexp.MustCompile(args[1])
		limit := 15 * time.Second
		if len(args) > 2 {
			n, _ := strconv.Atoi(args[2])
			limit = time.Duration(n) * time.Second
		}
		h, err := swarmcli.OpenHome(ts.Getenv("SWARM_DIR"), os.Stderr)
		ts.Check(err)
		var last string
		for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if text, err := h.Screen(context.Background(), args[0], 100); err == nil {
				last = text
				if re.MatchString(text) {
					return
				}
			}
		}
		ts.Fatalf("%s's screen does not match %q after %s:\n%s", args[0], args[1], limit, last)
	},
	// exitcode N CMD ARGS...: run CMD, which must exit with N (its output is kept for stdout
	// and stderr, as exec's).
	"exitcode": func(ts *testscript.TestScript, neg bool, args []string) {
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
	},
	// pidgone PID: the process is gone (within 10 s).
	"pidgone": func(ts *testscript.TestScript, neg bool, args []string) {
		pid, err := strconv.Atoi(strings.TrimSpace(args[0]))
		ts.Check(err)
		for i := 0; i < 500; i++ {
			if syscall.Kill(pid, 0) != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		ts.Fatalf("pid %d is still alive", pid)
	},
}

func TestScripts(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	testscript.Run(t, testscript.Params{
		Dir:   "testdata",
		Setup: testEnv,
		Cmds:  scriptCmds,
		Condition: func(cond string) (bool, error) {
			if cond == "python" {
				return pythonSwarm(t.TempDir()) != "", nil
			}
			return false, nil
		},
	})
}
