package loop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/testenv/lockedbuf"

	"github.com/agentfleet/fleet/internal/cli"
	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/postmortem"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
)

// A loop's control, against real processes: the test binary is the iterations' supervisor
// (the hidden verb, Options.Swarm.Supervisor) and the loop's monitor (`TEST run NAME`,
// Options.Monitor), tmux runs on a private socket directory, testdata/agent.sh is the agent.
// Every wait waits for the thing it then asserts on; a failure shows the post-mortem of the
// test's directory (the agent's log, the supervisor's entry, iterations.log, the loop's state,
// the tmux panes).

// monitorVerb is the test binary's argument that runs a loop's monitor (its command line must
// hold "run" and the loop's name: isMonitor).
const monitorVerb = "run"

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == supervise.SuperviseVerb {
		os.Exit(testenv.Supervisor(os.Args[2:], func(ctx context.Context, a cli.SupervisorArgs, input *os.File) error {
			return swarm.Supervise(ctx, a.SwarmDir, a.Handoff, a.Name, os.Stdout, input, os.Stderr)
		}))
	}
	if len(os.Args) == 3 && os.Args[1] == monitorVerb {
		os.Exit(monitorMain(os.Args[2]))
	}
	os.Exit(sweep.Guard(m).Run())
}

// monitorMain is a loop's monitor, as cmd/internal/ralphloop's run verb runs it, with the
// settings the test gave it in its environment ($SWARM_DIR, $TMUX_TMPDIR).
func monitorMain(name string) int {
	ls, err := Open(os.Getenv("SWARM_DIR"), options(os.Getenv("TMUX_TMPDIR"), os.Stdout, os.Stderr))
	if err == nil {
		err = ls.RunMonitor(context.Background(), name)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "monitor: %v\n", err)
		return 1
	}
	return 0
}

// options are the loops' options in the test and in its monitors: the test binary supervises
// and monitors, a failure's backoff is short.
func options(sockDir string, out, errw io.Writer) Options {
	exe, err := proc.Self()
	if err != nil {
		panic(err)
	}
	environ := append(os.Environ(), "TMUX_TMPDIR="+sockDir, "TMUX=")
	return Options{
		Swarm:   swarm.Options{Supervisor: []string{exe, supervise.SuperviseVerb}, Environ: environ, TmuxTmpDir: sockDir},
		Monitor: []string{exe, monitorVerb}, Tool: "ralph", Out: out, Err: errw, Backoff: 10 * time.Millisecond,
		CallWindow: callWindow, HookTimeout: hookTimeout,
	}
}

// syncBuffer is a log written by several goroutines and read while they write.
type syncBuffer = lockedbuf.Buffer

// lab is a test's swarm directory with its loops.
type lab struct {
	t        *testing.T
	root     string // the test's directory: sd (the swarm), the plans and counters
	ls       *Loops
	dir      statedir.Swarm
	agent    string
	out, err *syncBuffer
}

func newLab(t *testing.T) *lab {
	t.Helper()
	if testing.Short() {
		t.Skip("needs tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	agent, err := filepath.Abs("testdata/agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	// tmux socket paths must be short (about 100 bytes): not under t.TempDir().
	sockDir, err := os.MkdirTemp("", "lpt")
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, root: t.TempDir(), agent: agent, out: &syncBuffer{}, err: &syncBuffer{}}
	swarmDir := filepath.Join(l.root, "sd")
	// Cleanups run last first: the post-mortem, then the loops' monitors, then the supervisors
	// and tmux servers.
	t.Cleanup(func() { (&testenv.Swarm{Dir: swarmDir, SockDir: sockDir}).Stop() })
	t.Cleanup(func() {
		for _, name := range l.ls.Names() {
			Kill(context.Background(), l.ls.Swarm(), name, false, nil)
		}
	})
	t.Cleanup(func() {
		socks, _ := filepath.Glob(filepath.Join(sockDir, "tmux-*", "*"))
		postmortem.OnFailure(t, l.root, socks...)
		if t.Failed() {
			t.Logf("loop output:\n%s\nwarnings:\n%s", l.out, l.err)
		}
	})
	if l.ls, err = Open(swarmDir, options(sockDir, l.out, l.err)); err != nil {
		t.Fatal(err)
	}
	l.dir = l.ls.base.dir
	return l
}

// spawn starts the loop name whose agent follows plan (one action a line), without its
// monitor. The no-progress breaker is off (the agent works in this package's directory and
// changes nothing): TestNoProgress has it on.
func (l *lab) spawn(name string, plan ...string) *Spawned {
	l.t.Helper()
	planFile := filepath.Join(l.root, name+".plan")
	prompt := filepath.Join(l.root, "PROMPT.md")
	if err := os.WriteFile(planFile, []byte(strings.Join(plan, "\n")+"\n"), 0o644); err != nil {
		l.t.Fatal(err)
	}
	if err := os.WriteFile(prompt, []byte("go on\n"), 0o644); err != nil {
		l.t.Fatal(err)
	}
	off := 0
	sd, err := l.ls.Spawn(context.Background(), SpawnSpec{Name: name, PromptFile: prompt, MaxIterations: 20, NoProgress: &off,
		Cmd: []string{"sh", l.agent, planFile, filepath.Join(l.root, name+".counter")}})
	if err != nil {
		l.t.Fatalf("Spawn(%s) = %v", name, err)
	}
	return sd
}

// log is the loop's iterations.log.
func (l *lab) log(name string) string {
	b, _ := os.ReadFile(l.dir.RalphIterations(name))
	return string(b)
}

// state is the loop's state as its file holds it.
func (l *lab) state(name string) *State {
	l.t.Helper()
	st, err := (store{dir: l.dir, name: name}).load()
	if err != nil {
		l.t.Fatalf("reading %s's state: %v", name, err)
	}
	return st
}

// waitFor waits (at most 60 s: the machine may be loaded) until cond holds; else the test
// fails, saying what it waited for.
func (l *lab) waitFor(what string, cond func() bool) {
	l.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			l.t.Fatalf("%s: not after 60s", what)
		}
	}
}

// waitLog waits until the loop's iterations.log has a line matching re.
func (l *lab) waitLog(name, re string) {
	l.t.Helper()
	rx := regexp.MustCompile(re)
	l.waitFor(fmt.Sprintf("iterations.log of %s to match %q", name, re), func() bool { return rx.MatchString(l.log(name)) })
}

// waitMonitor waits until the loop's state records a monitor that holds the loop (alive), or
// none and no monitor holds it (!alive), and returns the recorded pid.
func (l *lab) waitMonitor(name string, alive bool) int {
	l.t.Helper()
	pid := 0
	l.waitFor(fmt.Sprintf("%s's monitor alive=%v", name, alive), func() bool {
		st, _ := (store{dir: l.dir, name: name}).load()
		if st == nil {
			return false
		}
		held := (store{dir: l.dir, name: name}).monitorAlive()
		if alive {
			if st.MonitorPID == nil || !held {
				return false
			}
			pid = *st.MonitorPID
			return true
		}
		return st.MonitorPID == nil && !held
	})
	return pid
}

// waitMonitorExited is waitMonitor(name, false), and then the monitor's process gone too: the
// monitor lets its lock go before it waits for its hook's last events (each bounded) and
// exits, so "the lock free" is "the loop let go", not "nothing of the loop runs".
func (l *lab) waitMonitorExited(name string) {
	l.t.Helper()
	seen := 0
	l.waitFor(name+"'s monitor recorded", func() bool {
		st, _ := (store{dir: l.dir, name: name}).load()
		if st != nil && st.MonitorPID != nil {
			seen = *st.MonitorPID
		}
		return seen != 0 || (st != nil && st.Status != StatusRunning)
	})
	l.waitMonitor(name, false)
	l.waitFor(fmt.Sprintf("%s's monitor (pid %d) to exit", name, seen), func() bool { return seen == 0 || !isMonitor(seen, name) })
}

// TestPauseResume: a pause lets the current iteration end and starts no other, the monitor
// leaves; resume starts a monitor again, which starts the next iteration.
func TestPauseResume(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	l.spawn("p1", "run 1")
	if _, err := l.ls.StartMonitor(ctx, "p1"); err != nil {
		t.Fatalf("StartMonitor(p1) = %v", err)
	}
	l.waitLog("p1", `START\] iteration 2/20`)
	if was, err := l.ls.Pause(ctx, "p1"); err != nil || was != StatusRunning {
		t.Fatalf("Pause(p1) = %q, %v, want running, nil", was, err)
	}
	if was, err := l.ls.Pause(ctx, "p1"); err != nil || was != StatusPaused {
		t.Fatalf("Pause(p1) again = %q, %v, want paused, nil (left as it is)", was, err)
	}
	// The monitor lets iteration 2 end, then leaves: once it is gone, no iteration can start.
	l.waitMonitor("p1", false)
	log := l.log("p1")
	switch {
	case !regexp.MustCompile(`PAUSE\] loop paused reason=manual`).MatchString(log):
		t.Fatalf("iterations.log has no manual pause:\n%s", log)
	case !regexp.MustCompile(`END\] iteration 2 exit=0`).MatchString(log):
		t.Fatalf("the monitor left before iteration 2 ended:\n%s", log)
	case strings.Contains(log, "iteration 3/"):
		t.Fatalf("a paused loop started iteration 3:\n%s", log)
	}
	if st := l.state("p1"); st.Status != StatusPaused || st.ExitReason != nil {
		t.Fatalf("state after the pause: status %q, exit reason %v; want paused, none", st.Status, st.ExitReason)
	}
	if resumed, err := l.ls.Resume(ctx, "p1"); err != nil || !resumed {
		t.Fatalf("Resume(p1) = %v, %v, want true, nil", resumed, err)
	}
	l.waitLog("p1", `START\] iteration 3/20`)
	if st := l.state("p1"); st.Status != StatusRunning {
		t.Fatalf("state after resume: status %q, want running", st.Status)
	}
	if resumed, err := l.ls.Resume(ctx, "p1"); err != nil || resumed {
		t.Fatalf("Resume(p1) of a running loop = %v, %v, want false, nil", resumed, err)
	}
}

// TestStop: once Stop returns, the loop is stopped (killed), its monitor gone, its worker
// not running, and no iteration starts.
func TestStop(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	l.spawn("s1", "run 2")
	if _, err := l.ls.StartMonitor(ctx, "s1"); err != nil {
		t.Fatalf("StartMonitor(s1) = %v", err)
	}
	l.waitLog("s1", `START\] iteration 2/20`)
	if _, err := l.ls.Stop(ctx, "s1", StopOptions{}); err != nil {
		t.Fatalf("Stop(s1) = %v", err)
	}
	st, err := l.ls.Status(ctx, "s1")
	switch {
	case err != nil:
		t.Fatalf("Status(s1) = %v", err)
	case st.State.Status != StatusStopped || st.State.ExitReason == nil || *st.State.ExitReason != ReasonKilled:
		t.Fatalf("after Stop: status %q, exit reason %v; want stopped, killed", st.State.Status, st.State.ExitReason)
	case st.MonitorAlive || st.State.MonitorPID != nil:
		t.Fatalf("after Stop: a monitor holds the loop (%v) or is recorded (%v)", st.MonitorAlive, st.State.MonitorPID)
	case st.WorkerStatus == "running":
		// stopped, or removed: a loop stopped between two iterations has no worker.
		t.Fatalf("after Stop: the worker is %s, want it stopped or removed", st.WorkerStatus)
	}
	log := l.log("s1")
	if !regexp.MustCompile(`DONE\] loop complete after \d+ iterations reason=killed`).MatchString(log) {
		t.Fatalf("iterations.log has no end by kill:\n%s", log)
	}
	n := strings.Count(log, "START]")
	// Nothing runs the loop any more: asking again changes nothing.
	if _, err := l.ls.Stop(ctx, "s1", StopOptions{}); err != nil {
		t.Fatalf("Stop(s1) again = %v", err)
	}
	if got := strings.Count(l.log("s1"), "START]"); got != n {
		t.Fatalf("iterations started after Stop: %d, then %d", n, got)
	}
	if _, err := l.ls.Stop(ctx, "nosuch", StopOptions{}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("Stop(nosuch) = %v, want not found", err)
	}
}

// TestMonitorLost: a monitor SIGKILLed while its worker runs is found on the next look
// (Status: stopped, monitor_disconnected, the worker still running); Resume starts a monitor
// that takes the running iteration over, starting no new one.
func TestMonitorLost(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	l.spawn("m1", "idle")
	if _, err := l.ls.StartMonitor(ctx, "m1"); err != nil {
		t.Fatalf("StartMonitor(m1) = %v", err)
	}
	pid := l.waitMonitor("m1", true)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the monitor %d: %v", pid, err)
	}
	// The next look finds it lost, once the kernel has let its lock go.
	var st *Status
	l.waitFor("Status(m1) to find the monitor lost", func() bool {
		var err error
		st, err = l.ls.Status(ctx, "m1")
		return err == nil && st.State.Status == StatusStopped
	})
	switch {
	case st.State.ExitReason == nil || *st.State.ExitReason != ReasonDisconnected:
		t.Fatalf("a lost monitor's loop: exit reason %v, want monitor_disconnected", st.State.ExitReason)
	case st.State.MonitorPID != nil || st.MonitorAlive:
		t.Fatalf("a lost monitor is still recorded (%v) or holds the loop (%v)", st.State.MonitorPID, st.MonitorAlive)
	case st.WorkerStatus != "running":
		t.Fatalf("the worker of a lost monitor is %s, want running (only the monitor died)", st.WorkerStatus)
	case !strings.Contains(l.log("m1"), "DISCONNECT] monitor disconnected (pid "):
		t.Fatalf("iterations.log does not say the monitor was lost:\n%s", l.log("m1"))
	}
	var text bytes.Buffer
	st.WriteText(&text)
	if !strings.Contains(text.String(), "Exit reason: monitor_disconnected (worker running)\nWorker status: running\n") {
		t.Fatalf("status text of a lost monitor:\n%s", text.String())
	}

	if resumed, err := l.ls.Resume(ctx, "m1"); err != nil || !resumed {
		t.Fatalf("Resume(m1) = %v, %v, want true, nil", resumed, err)
	}
	again := l.waitMonitor("m1", true)
	if again == pid {
		t.Fatalf("Resume recorded the dead monitor's pid %d", pid)
	}
	st2 := l.state("m1")
	switch {
	case st2.Status != StatusRunning || st2.ExitReason != nil:
		t.Fatalf("after Resume: status %q, exit reason %v; want running, none", st2.Status, st2.ExitReason)
	case st2.CurrentIteration != 1 || strings.Contains(l.log("m1"), "iteration 2/"):
		t.Fatalf("the new monitor started another iteration (%d) instead of taking the running one over:\n%s",
			st2.CurrentIteration, l.log("m1"))
	}
	if counter, _ := os.ReadFile(filepath.Join(l.root, "m1.counter")); string(counter) != "start 1\n" {
		t.Fatalf("the agent was started again: %q", counter)
	}
}

// TestFailedStartCountedOnce: an iteration whose agent cannot be typed into (it exits before
// its prompt) is one failure, its own exit: not a failed start and then, on the next pass, the
// same worker's exit counted again. Five in a row fail the loop. (An agent that exits after
// reading the prompt's first line, its work done, is judged by its done pattern: loop-verbs.)
func TestFailedStartCountedOnce(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	l.spawn("f1", "run 0", "vanish")
	if _, err := l.ls.StartMonitor(ctx, "f1"); err != nil {
		t.Fatalf("StartMonitor(f1) = %v", err)
	}
	l.waitMonitor("f1", false)
	log := l.log("f1")
	for n := 2; n <= 6; n++ {
		fails := regexp.MustCompile(fmt.Sprintf(`FAIL\] iteration %d exit=`, n)).FindAllString(log, -1)
		if len(fails) != 1 {
			t.Fatalf("iteration %d failed %d times in iterations.log, want once:\n%s", n, len(fails), log)
		}
	}
	if st := l.state("f1"); st.Status != StatusFailed || st.CurrentIteration != 6 || st.ConsecutiveFailures != 5 {
		t.Fatalf("state: status %q, iteration %d, %d failures in a row; want failed, 6, 5:\n%s",
			st.Status, st.CurrentIteration, st.ConsecutiveFailures, log)
	}
}

// TestNoProgress: the no-progress breaker (on by default, N = 3) ends a loop whose agent
// changes nothing in its git working tree after 3 iterations, failed, no-progress; one whose
// agent changes a file every time runs to its maximum (issue 19: it ran to the maximum).
func TestNoProgress(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	for _, c := range []struct {
		name, action   string
		status, reason string
		iterations     int
	}{
		{"n1", "run 0", StatusFailed, ReasonNoProgress, 3},
		{"n2", "touch notes.txt", StatusStopped, ReasonMax, 5},
	} {
		repo := filepath.Join(l.root, c.name+"-repo")
		if _, err := gitx.Run(context.Background(), "", "", "init", "-q", repo); err != nil {
			t.Fatal(err)
		}
		planFile := filepath.Join(l.root, c.name+".plan")
		prompt := filepath.Join(l.root, "PROMPT.md")
		os.WriteFile(planFile, []byte(c.action+"\n"), 0o644)
		os.WriteFile(prompt, []byte("go on\n"), 0o644)
		if _, err := l.ls.Spawn(ctx, SpawnSpec{Name: c.name, PromptFile: prompt, MaxIterations: 5, Cwd: repo,
			Cmd: []string{"sh", l.agent, planFile, filepath.Join(l.root, c.name+".counter")}}); err != nil {
			t.Fatalf("Spawn(%s) = %v", c.name, err)
		}
		if _, err := l.ls.StartMonitor(ctx, c.name); err != nil {
			t.Fatalf("StartMonitor(%s) = %v", c.name, err)
		}
		l.waitMonitor(c.name, false)
		st := l.state(c.name)
		if st.Status != c.status || st.ExitReason == nil || *st.ExitReason != c.reason || st.CurrentIteration != c.iterations {
			t.Errorf("%s (%s): ended %s (%v) after %d iterations; want %s (%s) after %d:\n%s", c.name, c.action,
				st.Status, st.ExitReason, st.CurrentIteration, c.status, c.reason, c.iterations, l.log(c.name))
		}
		s, err := l.ls.Status(ctx, c.name)
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		s.WriteText(&text)
		if !strings.Contains(text.String(), "No-progress breaker: ") {
			t.Errorf("status does not show the breaker:\n%s", text.String())
		}
	}
}
