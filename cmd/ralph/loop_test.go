package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/rogpeppe/go-internal/testscript"
)

// swarm's loops are tested through the real binary (the test binary, as ralph) against real
// tmux on a private socket directory, real git and real supervisors; the agent is
// testdata/loop-agent.sh, which does what a plan file says at each start.

// loopEnv gives every loop script its own $SWARM_DIR, tmux socket directory, a git repository
// at $WORK/repo, $AGENT, a short backoff (RALPH_TEST_BACKOFF), and kills at the end every
// monitor, supervisor and tmux server it started.
func loopEnv(env *testscript.Env) error {
	agent, _ := filepath.Abs("testdata/loop-agent.sh")
	sw, err := testenv.NewSwarm(env, "rlp")
	if err != nil {
		return err
	}
	swarmDir := sw.Dir
	env.Defer(func() {
		sw.PostMortem()
		cleanupSwarm(swarmDir, sw.SockDir)
		// Every loop a script left validates and its log parses (loops named bad* are the
		// scripts' broken ones).
		dirs, _ := os.ReadDir(statedir.Swarm{Root: swarmDir}.Ralph())
		for _, d := range dirs {
			if !strings.HasPrefix(d.Name(), "bad") {
				if err := loopFilesOK(swarmDir, d.Name()); err != nil {
					env.T().Fatal(err)
				}
			}
		}
	})
	env.Setenv("AGENT", agent)
	env.Setenv("RALPH_TEST_BACKOFF", "10ms")
	env.Setenv("STATE_DIR", "")
	env.Setenv("SWARM_PY", testenv.PythonSwarm(env.WorkDir))
	return testenv.GitRepo(filepath.Join(env.WorkDir, "repo"))
}

// cleanupSwarm kills what a test left running in swarmDir: the loops' monitors (their pid,
// checked by command line) first, so that none starts another worker, then what
// testenv.Swarm.Stop kills: the workers' supervisors and the tmux servers under sockDir.
func cleanupSwarm(swarmDir, sockDir string) {
	sd := statedir.Swarm{Root: swarmDir}
	dirs, _ := os.ReadDir(sd.Ralph())
	for _, d := range dirs {
		if pid := monitorPID(sd, d.Name()); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	(&testenv.Swarm{Dir: swarmDir, SockDir: sockDir}).Stop()
}

// monitorPID is a loop's recorded monitor pid when that process is its monitor.
func monitorPID(sd statedir.Swarm, name string) int {
	b, err := os.ReadFile(sd.RalphState(name))
	if err != nil {
		return 0
	}
	var st struct {
		PID *int `json:"monitor_pid"`
	}
	if json.Unmarshal(b, &st) != nil || st.PID == nil {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", *st.PID))
	if err != nil || !bytes.Contains(cmdline, []byte("\x00"+name)) {
		return 0
	}
	return *st.PID
}

// logLine is a line of iterations.log as the Python swarm writes it (and reason=no-progress,
// the no-progress breaker's, and the rails' COST, COMMIT and REVERT lines, which it has not).
var logLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d \[(START|END|FAIL|TIMEOUT|DONE|PAUSE|WARN|FATAL|ERROR|DISCONNECT|COST|COMMIT|REVERT)\] ` +
	`(iteration \d+/\d+|iteration \d+ exit=(\d+|\?) duration=[0-9hms ]*|iteration \d+ exit=\d+ attempt=\d/5 backoff=\d+s|` +
	`iteration \d+ inactivity_timeout=\d+s|loop complete after \d+ iterations reason=[\w-]+|loop paused reason=\w+|` +
	`iteration \d+: .*|iteration \d+ -- .*|monitor disconnected.*)$`)

func checkLoopFiles(ts *testscript.TestScript, name string) {
	if err := loopFilesOK(ts.Getenv("SWARM_DIR"), name); err != nil {
		ts.Fatalf("%v", err)
	}
}

// loopFilesOK checks a loop's files: the state validates against the ralph-state schema and is
// in the Python swarm's format; every iterations.log line is in its format.
func loopFilesOK(swarmDir, name string) error {
	sd := statedir.Swarm{Root: swarmDir}
	b, err := os.ReadFile(sd.RalphState(name))
	if err != nil {
		return err
	}
	s, err := schema.Load("ralph-state", "")
	if err != nil {
		return err
	}
	problems, err := s.Validate(b)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s's state does not validate: %v\n%s", name, problems, b)
	}
	// Python's json.load reads it: no final newline, two-space indent, ASCII only.
	if bytes.HasSuffix(b, []byte("\n")) || !bytes.HasPrefix(b, []byte("{\n  \"worker_name\": ")) {
		return fmt.Errorf("%s's state is not in the Python swarm's format:\n%s", name, b)
	}
	log, err := os.ReadFile(sd.RalphIterations(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(log), "\n"), "\n") {
		if !logLine.MatchString(l) {
			return fmt.Errorf("%s: iterations.log line not in the Python swarm's format: %q", name, l)
		}
	}
	return nil
}

var loopCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	// waitlog NAME REGEXP [SECONDS]: wait until the loop's iterations.log matches (negated:
	// it still does not match after SECONDS, default 1).
	"waitlog": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: waitlog NAME REGEXP [SECONDS]")
		}
		re := regexp.MustCompile("(?m)" + args[1])
		limit := 20 * time.Second
		if neg {
			limit = time.Second
		}
		if len(args) > 2 {
			n, _ := strconv.ParseFloat(args[2], 64)
			limit = time.Duration(n * float64(time.Second))
		}
		path := statedir.Swarm{Root: ts.Getenv("SWARM_DIR")}.RalphIterations(args[0])
		var last []byte
		for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			last, _ = os.ReadFile(path)
			if re.Match(last) {
				if neg {
					ts.Fatalf("iterations.log matches %q:\n%s", args[1], last)
				}
				// A line written under the state's lock (START, DONE, ...) is followed by the
				// state's write under the same lock: taking it waits for that.
				sd := statedir.Swarm{Root: ts.Getenv("SWARM_DIR")}
				if unlock, err := fsx.LockFile(context.Background(), sd.RalphStateLock(args[0])); err == nil {
					unlock()
				}
				return
			}
		}
		if !neg {
			ts.Fatalf("iterations.log does not match %q after %s:\n%s", args[1], limit, last)
		}
	},
	// waitstate NAME KEY VALUE [SECONDS]: wait until the loop's state has KEY = VALUE (JSON).
	"waitstate": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 3 {
			ts.Fatalf("usage: waitstate NAME KEY JSON [SECONDS]")
		}
		limit := 20 * time.Second
		if len(args) > 3 {
			n, _ := strconv.ParseFloat(args[3], 64)
			limit = time.Duration(n * float64(time.Second))
		}
		path := statedir.Swarm{Root: ts.Getenv("SWARM_DIR")}.RalphState(args[0])
		var last []byte
		for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			last, _ = os.ReadFile(path)
			var m map[string]json.RawMessage
			if json.Unmarshal(last, &m) == nil && string(m[args[1]]) == args[2] {
				return
			}
		}
		ts.Fatalf("%s is not %s after %s:\n%s", args[1], args[2], limit, last)
	},
	// monitorgone NAME: wait (at most 20 s) until no monitor runs the loop: its monitor.lock is
	// free. The monitor clears monitor_pid before it lets the lock go (internal/ralph/loop's
	// proc.go), so monitor_pid null says it has left the loop, not that it is gone: status
	// reports a monitor alive for as long as it holds the lock.
	"monitorgone": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 1 {
			ts.Fatalf("usage: monitorgone NAME")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		lock := filepath.Join(statedir.Swarm{Root: ts.Getenv("SWARM_DIR")}.RalphDir(args[0]), "monitor.lock")
		unlock, err := fsx.LockFile(ctx, lock)
		if err != nil {
			ts.Fatalf("the monitor of %s still holds %s after 20s: %v", args[0], lock, err)
		}
		unlock()
	},
	// agestate NAME KEY SECONDS: set the UTC timestamp KEY of the loop's state to SECONDS ago
	// (as another process would write it: under the state's lock).
	"agestate": func(ts *testscript.TestScript, neg bool, args []string) {
		sd := statedir.Swarm{Root: ts.Getenv("SWARM_DIR")}
		secs, err := strconv.Atoi(args[2])
		ts.Check(err)
		stamp := time.Now().UTC().Add(-time.Duration(secs)*time.Second).Format("2006-01-02T15:04:05.000000") + "+00:00"
		ts.Check(fsx.Update(context.Background(), sd.RalphState(args[0]), sd.RalphStateLock(args[0]), func(old []byte) ([]byte, error) {
			re := regexp.MustCompile(`"` + args[1] + `": [^,\n]*`)
			return re.ReplaceAll(old, []byte(`"`+args[1]+`": "`+stamp+`"`)), nil
		}))
	},
	// loopfiles NAME: the loop's state validates against the ralph-state schema in the Python
	// swarm's format, and every iterations.log line is in its format.
	"loopfiles": func(ts *testscript.TestScript, neg bool, args []string) { checkLoopFiles(ts, args[0]) },
	// monitor NAME SIGNAL: send the loop's monitor a signal (KILL, TERM), and wait for it to go
	// when it is KILL.
	"monitor": func(ts *testscript.TestScript, neg bool, args []string) {
		sd := statedir.Swarm{Root: ts.Getenv("SWARM_DIR")}
		pid := monitorPID(sd, args[0])
		if pid == 0 {
			ts.Fatalf("no monitor for %s", args[0])
		}
		sig := map[string]syscall.Signal{"KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM, "INT": syscall.SIGINT}[args[1]]
		ts.Check(syscall.Kill(pid, sig))
		for i := 0; sig == syscall.SIGKILL && i < 500 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	},
	// count FILE N: FILE has N lines (waiting up to 10 s for them).
	"count": func(ts *testscript.TestScript, neg bool, args []string) {
		var b []byte
		n := 0
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			b, _ = os.ReadFile(ts.MkAbs(args[0]))
			if n = strings.Count(string(b), "\n"); strconv.Itoa(n) == args[1] {
				return
			}
		}
		ts.Fatalf("%s has %d lines, want %s:\n%s", args[0], n, args[1], b)
	},
	// exitcode N CMD ARGS...: CMD must exit with N.
	"exitcode": testenv.ExitCode,
	// sleep SECONDS
	"sleep": func(ts *testscript.TestScript, neg bool, args []string) {
		n, _ := strconv.ParseFloat(args[0], 64)
		time.Sleep(time.Duration(n * float64(time.Second)))
	},
}

func TestLoopScripts(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	files, _ := filepath.Glob("testdata/loop-*.txtar")
	if len(files) == 0 {
		t.Fatal("no testdata/loop-*.txtar")
	}
	testscript.Run(t, testscript.Params{Files: files, Setup: loopEnv, Cmds: loopCmds,
		Condition: func(cond string) (bool, error) {
			if cond == "python" {
				return testenv.PythonSwarm(t.TempDir()) != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		}})
}
