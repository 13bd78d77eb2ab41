package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/need"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
	"github.com/rogpeppe/go-internal/testscript"
)

// tool is the name testscript gives the test binary on PATH.
const tool = "swarm"

func TestMain(m *testing.M) {
	testscript.Main(sweep.Guard(m), map[string]func(){
		tool: func() { os.Exit(newTool().Main(os.Args, cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})) },
	})
}

// testEnv gives every script its own swarm (testenv.NewSwarm: $SWARM_DIR, a private tmux
// socket directory; every server in it is killed at the end, and every supervisor still
// registered), $AGENT (testdata/agent.sh), a git repository at $WORK/repo, and $SWARM_PY when
// the Python swarm's mirror is here.
func testEnv(env *testscript.Env) error {
	agent, _ := filepath.Abs("testdata/agent.sh")
	sw, err := testenv.NewSwarm(env, "swm")
	if err != nil {
		return err
	}
	env.Defer(sw.Stop)
	env.Setenv("AGENT", agent)
	if err := testenv.GitRepo(filepath.Join(env.WorkDir, "repo")); err != nil {
		return err
	}
	env.Setenv("SWARM_PY", testenv.PythonSwarm(env.WorkDir))
	gitBin, _ := exec.LookPath("git")
	env.Setenv("GITBIN", gitBin)
	swarmBin, _ := exec.LookPath(tool) // testscript puts the test binary on PATH as swarm
	env.Setenv("SWARMBIN", swarmBin)
	return nil
}

var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"need": need.Cmd,
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
		sw, err := swarm.Open(ts.Getenv("SWARM_DIR"), swarm.Options{Warnings: os.Stderr})
		ts.Check(err)
		var last string
		for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			w, _ := sw.Worker(args[0])
			if w == nil {
				continue
			}
			if text, err := sw.Screen(context.Background(), w, 100); err == nil {
				last = text
				if re.MatchString(text) {
					return
				}
			}
		}
		ts.Fatalf("%s's screen does not match %q after %s:\n%s", args[0], args[1], limit, last)
	},
	// waitoutput NAME REGEXP [SECONDS]: wait until the worker's output log (the bytes its agent
	// wrote, as its supervisor keeps them) matches. Unlike the screen, the log has no wrapped
	// rows: a line is matched whole wherever it was printed, and its end (a newline) is there.
	"waitoutput": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: waitoutput NAME REGEXP [SECONDS]")
		}
		re := regexp.MustCompile(args[1])
		limit := 15 * time.Second
		if len(args) > 2 {
			n, _ := strconv.Atoi(args[2])
			limit = time.Duration(n) * time.Second
		}
		sw, err := swarm.Open(ts.Getenv("SWARM_DIR"), swarm.Options{Warnings: os.Stderr})
		ts.Check(err)
		path := sw.Dir().StdoutLog(args[0]) // a process worker's; a tmux worker's is LogPath
		if w, _ := sw.Worker(args[0]); w != nil && w.Tmux != nil {
			path = sw.LogPath(args[0])
		}
		var last []byte
		for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if last, _ = os.ReadFile(path); re.Match(last) {
				return
			}
		}
		ts.Fatalf("%s's output does not match %q after %s:\n%q", args[0], args[1], limit, last)
	},
	// maxrss MB OUT CMD ARGS...: run CMD (found on the script's PATH) with its stdout in the file
	// OUT; it must succeed with a peak resident memory under MB megabytes. (A data ulimit
	// cannot bound a binary built with the race detector: its runtime maps far more.)
	"maxrss": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 3 {
			ts.Fatalf("usage: maxrss MB OUT CMD ARGS...")
		}
		limit, err := strconv.Atoi(args[0])
		ts.Check(err)
		path, err := exec.LookPath(args[2])
		if err != nil {
			for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
				if p := filepath.Join(dir, args[2]); fileExists(p) {
					path, err = p, nil
					break
				}
			}
		}
		ts.Check(err)
		out, err := os.Create(ts.MkAbs(args[1]))
		ts.Check(err)
		defer out.Close()
		cmd := exec.Command(path, args[3:]...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = ts.MkAbs("."), out, os.Stderr
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
		}
		cmd.Env = append(cmd.Env, "SWARM_DIR="+ts.Getenv("SWARM_DIR"), "PATH="+ts.Getenv("PATH"), "HOME="+ts.Getenv("HOME"))
		ts.Check(cmd.Run())
		ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		if !ok {
			ts.Fatalf("no resource usage for %s", args[2])
		}
		if mb := ru.Maxrss / 1024; mb >= int64(limit) {
			ts.Fatalf("%s used %d MB at its peak, want under %d", strings.Join(args[2:], " "), mb, limit)
		}
	},
	// waitcount PATH REGEXP N: wait (15 s at most) until REGEXP matches N times in PATH (a
	// supervisor's write into state.json has landed).
	"waitcount": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 3 {
			ts.Fatalf("usage: waitcount PATH REGEXP N")
		}
		re := regexp.MustCompile(args[1])
		n, err := strconv.Atoi(args[2])
		ts.Check(err)
		var last []byte
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if last, _ = os.ReadFile(ts.MkAbs(args[0])); len(re.FindAll(last, -1)) == n {
				return
			}
		}
		ts.Fatalf("%s does not match %q %d times after 15s:\n%s", args[0], args[1], n, last)
	},
	// waitfile PATH: wait (at most 20 s) until PATH exists (an agent says it is ready by making
	// it).
	"waitfile": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 1 {
			ts.Fatalf("usage: waitfile PATH")
		}
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
				return
			}
		}
		ts.Fatalf("%s does not exist after 20s", args[0])
	},
	// waitmatch FILE REGEXP: wait (at most 20 s) until FILE exists and matches REGEXP (an empty
	// one: until it exists).
	"waitmatch": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: waitmatch FILE REGEXP")
		}
		re := regexp.MustCompile(args[1])
		var last []byte
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			b, err := os.ReadFile(ts.MkAbs(args[0]))
			if err == nil && re.Match(b) {
				return
			}
			last = b
		}
		ts.Fatalf("%s does not match %q after 20s:\n%s", args[0], args[1], last)
	},
	// exitcode N CMD ARGS...: CMD must exit with N.
	"exitcode": testenv.ExitCode,
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
			switch cond {
			case "python":
				return testenv.PythonSwarm(t.TempDir()) != "", nil
			case "root": // can chown a directory to another user
				return os.Geteuid() == 0, nil
			}
			return false, nil
		},
	})
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
