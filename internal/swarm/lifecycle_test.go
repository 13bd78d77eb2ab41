package swarm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/testenv/lockedbuf"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
	"github.com/agentfleet/fleet/internal/worker"
)

// The lifecycles of workers, against real supervisors (the test binary itself, answering the
// hidden verb: Options.Supervisor is how a swarm starts them), real tmux on a private socket
// directory, and testdata/agent.sh as the agent. Every wait waits for the thing it then
// asserts on; a failure shows the worker's entry, its supervisor's registry entry and the
// agent's output log.

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervise.SuperviseVerb {
		os.Exit(testenv.Supervisor(os.Args[2:], func(ctx context.Context, a cli.SupervisorArgs, input *os.File) error {
			return Supervise(ctx, a.SwarmDir, a.Handoff, a.Name, os.Stdout, input, os.Stderr)
		}))
	}
	os.Exit(sweep.Guard(m).Run())
}

// lab is a test's swarm: its own directory and tmux socket directory, the test binary as the
// supervisor, warnings kept. Cleanup kills every supervisor and tmux server it leaves.
type lab struct {
	t        *testing.T
	dir      string
	opts     Options
	sw       *Swarm
	agent    string
	warnings *syncBuffer
}

// syncBuffer is a log written by several goroutines and read while they write.
type syncBuffer = lockedbuf.Buffer

func newLab(t *testing.T) *lab {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agent, err := filepath.Abs("testdata/agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	// tmux socket paths must be short (about 100 bytes): not under t.TempDir().
	sockDir, err := os.MkdirTemp("", "swt")
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, dir: filepath.Join(t.TempDir(), "sd"), agent: agent, warnings: &syncBuffer{}}
	t.Cleanup(func() { (&testenv.Swarm{Dir: l.dir, SockDir: sockDir}).Stop() })
	l.opts = Options{Supervisor: []string{exe, supervise.SuperviseVerb}, Environ: os.Environ(), TmuxTmpDir: sockDir,
		Warnings: l.warnings}
	if l.sw, err = Open(l.dir, l.opts); err != nil {
		t.Fatal(err)
	}
	return l
}

// fatalf fails the test with what the swarm knows of the worker name: its entry in
// state.json, its supervisor's registry entry, the agent's output log, the warnings.
func (l *lab) fatalf(name, format string, args ...any) {
	l.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, format, args...)
	if w, _ := l.sw.Worker(name); w != nil {
		fmt.Fprintf(&b, "\n--- %s in state.json:\n%s", name, worker.EncodeWorkers([]*worker.Worker{w}))
	}
	entry, _ := os.ReadFile(l.sw.layout.EntryPath(name))
	fmt.Fprintf(&b, "\n--- its supervisor's entry:\n%s", entry)
	for _, p := range []string{l.sw.Dir().StdoutLog(name), l.sw.LogPath(name)} {
		if out, err := os.ReadFile(p); err == nil {
			fmt.Fprintf(&b, "\n--- the agent's output (%s):\n%s", filepath.Base(p), out)
		}
	}
	fmt.Fprintf(&b, "\n--- warnings:\n%s", l.warnings)
	l.t.Fatal(b.String())
}

// waitFor waits (at most 30 s) until cond holds; else the test fails, saying what it waited for.
func (l *lab) waitFor(name, what string, cond func() bool) {
	l.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			l.fatalf(name, "%s: not after 30s", what)
		}
	}
}

// waitScreen waits until w's screen matches re.
func (l *lab) waitScreen(w *worker.Worker, re string) {
	l.t.Helper()
	rx := regexp.MustCompile(re)
	var last string
	l.waitFor(w.Name, fmt.Sprintf("%s's screen to match %q", w.Name, re), func() bool {
		last, _ = l.sw.Screen(context.Background(), w, 100)
		return rx.MatchString(last)
	})
}

// stopped waits until the worker name is no longer running, and returns its entry.
func (l *lab) stopped(name string) (*worker.Worker, Liveness) {
	l.t.Helper()
	var w *worker.Worker
	var live Liveness
	l.waitFor(name, name+" to stop", func() bool {
		w, _ = l.sw.Worker(name)
		if w == nil {
			return false
		}
		live = l.sw.Live(context.Background(), w)
		return !live.Running
	})
	return w, live
}

func TestProcessWorker(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	w, err := l.sw.Spawn(ctx, Spec{Name: "p1", Cmd: []string{l.agent}, Env: worker.Env{{Key: "GREETING", Value: "hi there"}},
		Tags: []string{"a"}})
	if err != nil {
		l.fatalf("p1", "Spawn(p1) = %v", err)
	}
	// The entry as written: the supervisor's pid is the worker's, the spawn's journal is gone.
	saved, _ := l.sw.Worker("p1")
	var supPID int64
	switch {
	case saved == nil || saved.Started != w.Started:
		l.fatalf("p1", "Spawn returned %+v, state.json has %+v", w, saved)
	case w.PID == nil || !saved.Meta(worker.MetaSupervisorPID, &supPID) || supPID != *w.PID:
		l.fatalf("p1", "the worker's pid %v is not its supervisor's (%d)", w.PID, supPID)
	case saved.Metadata.Has(metaSpawning) || !saved.Supervised():
		l.fatalf("p1", "the entry still has its journal, or is not supervised")
	case saved.Tmux != nil || saved.Status != worker.StatusRunning:
		l.fatalf("p1", "a process worker with a tmux window, or not running")
	}
	if !l.sw.Live(ctx, w).Running {
		l.fatalf("p1", "Live(p1) says it is not running right after its spawn")
	}
	l.waitScreen(w, "agent ready")
	// Its environment is Options.Environ with the Spec's set over it; text goes in through the
	// supervisor.
	if err := l.sw.Send(ctx, w, "env GREETING", SendOptions{}); err != nil {
		l.fatalf("p1", "Send = %v", err)
	}
	l.waitScreen(w, "agent env: GREETING=hi there")

	if err := l.sw.Stop(ctx, w); err != nil {
		l.fatalf("p1", "Stop = %v", err)
	}
	x, live := l.stopped("p1")
	if live.Outcome == nil || live.Outcome.Reason != "killed" || live.Outcome.ExitCode == nil {
		l.fatalf("p1", "after Stop, Live = %+v, want stopped, killed, with an exit code", live)
	}
	if x.Status != worker.StatusStopped {
		l.fatalf("p1", "after Stop, state.json says %s", x.Status)
	}
	if out, _ := os.ReadFile(l.sw.Dir().StdoutLog("p1")); !bytes.Contains(out, []byte("agent env: GREETING=hi there")) {
		l.fatalf("p1", "the process worker's output is not in logs/p1.stdout.log")
	}
	// Clean takes it out, logs and all.
	if err := l.sw.Clean(ctx, x); err != nil {
		t.Fatal(err)
	}
	if w, _ := l.sw.Worker("p1"); w != nil {
		l.fatalf("p1", "p1 is still in state.json after Clean")
	}
	if _, err := os.Stat(l.sw.Dir().StdoutLog("p1")); err == nil {
		t.Errorf("Clean left logs/p1.stdout.log")
	}
}

func TestTmuxWorker(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	sock := "t"
	sp := Spec{Name: "t1", Cmd: []string{l.agent}, Tmux: &TmuxSpec{Session: "s", Socket: &sock}}
	w, err := l.sw.Spawn(ctx, sp)
	if err != nil {
		l.fatalf("t1", "Spawn(t1) = %v", err)
	}
	if w.Tmux == nil || w.Tmux.Session != "s" || w.Tmux.Window != "t1" || w.PID != nil {
		l.fatalf("t1", "Spawn(t1) = %+v, want window s:t1 and no pid", w.Tmux)
	}
	l.waitScreen(w, "agent ready")
	// The agent's own exit code, recorded by its supervisor.
	if err := l.sw.Send(ctx, w, "exit 3", SendOptions{}); err != nil {
		l.fatalf("t1", "Send = %v", err)
	}
	x, live := l.stopped("t1")
	if live.Outcome == nil || live.Outcome.ExitCode == nil || *live.Outcome.ExitCode != 3 || live.Outcome.Reason != "agent-exit-3" {
		l.fatalf("t1", "Live after exit 3 = %+v, want exit code 3", live.Outcome)
	}
	// Release: once it returns, the supervisor and the window are gone, and the name is free.
	l.sw.Release(ctx, x, 10*time.Second)
	tc, err := l.sw.Tmux(x)
	if err != nil {
		t.Fatal(err)
	}
	windows, _ := tc.ListWindows(ctx, "s")
	for _, win := range windows {
		if win.Name == "t1" {
			l.fatalf("t1", "window s:t1 is still there after Release")
		}
	}
	if err := l.sw.Remove(ctx, x); err != nil {
		l.fatalf("t1", "Remove = %v", err)
	}
	if w, _ := l.sw.Worker("t1"); w != nil {
		l.fatalf("t1", "t1 is still in state.json after Remove")
	}
	// The same name again, at once; a running worker is not removed.
	w2, err := l.sw.Spawn(ctx, sp)
	if err != nil {
		l.fatalf("t1", "a second Spawn(t1) = %v", err)
	}
	l.waitScreen(w2, "agent ready")
	if err := l.sw.Remove(ctx, w2); err == nil {
		l.fatalf("t1", "Remove of a running worker succeeded")
	}
	if err := l.sw.Stop(ctx, w2); err != nil {
		l.fatalf("t1", "Stop = %v", err)
	}
	if _, live := l.stopped("t1"); live.Outcome == nil || live.Outcome.Reason != "killed" {
		l.fatalf("t1", "after Stop, Live = %+v, want killed", live.Outcome)
	}
}

func TestHeartbeat(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	w, err := l.sw.Spawn(ctx, Spec{Name: "h1", Cmd: []string{l.agent},
		Heartbeat: &HeartbeatSpec{Interval: time.Second, Expire: time.Hour, Message: "say beat"}})
	if err != nil {
		l.fatalf("h1", "Spawn(h1) = %v", err)
	}
	hb, err := l.sw.Heartbeat("h1")
	if err != nil || hb == nil || hb.Status != worker.HeartbeatActive || hb.MonitorPID == nil || *hb.MonitorPID != *w.PID ||
		hb.IntervalSeconds != 1 || hb.ExpireAt == nil {
		l.fatalf("h1", "the heartbeat after Spawn = %+v, %v; want active, every 1s, its monitor the supervisor", hb, err)
	}
	// The supervisor types the message into the idle agent and counts the beat.
	l.waitScreen(w, "agent says: beat")
	l.waitFor("h1", "the beat counted", func() bool {
		hb, _ = l.sw.Heartbeat("h1")
		return hb != nil && hb.BeatCount >= 1 && hb.LastBeatAt != nil
	})
	// The heartbeat ends with its worker.
	if err := l.sw.Stop(ctx, w); err != nil {
		l.fatalf("h1", "Stop = %v", err)
	}
	l.waitFor("h1", "the heartbeat stopped with its worker", func() bool {
		hb, _ = l.sw.Heartbeat("h1")
		return hb != nil && hb.Status == worker.HeartbeatStopped && hb.MonitorPID == nil
	})
}

func TestLostSupervisorIsClosed(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	w, err := l.sw.Spawn(ctx, Spec{Name: "l1", Cmd: []string{l.agent}})
	if err != nil {
		l.fatalf("l1", "Spawn(l1) = %v", err)
	}
	l.waitScreen(w, "agent ready")
	pid := int(*w.PID)
	syscall.Kill(pid, syscall.SIGKILL)
	l.waitFor("l1", "the supervisor gone", func() bool { return !proc.Alive(pid) })
	// Nothing recorded its end: the next look closes it as lost, exit code unknown.
	live := l.sw.Live(ctx, w)
	if live.Running || live.Outcome == nil || live.Outcome.Reason != supervise.ReasonLost || live.Outcome.ExitCode != nil {
		l.fatalf("l1", "Live after the supervisor's death = %+v (outcome %+v), want stopped, %s, no exit code", live, live.Outcome,
			supervise.ReasonLost)
	}
	x, _ := l.sw.Worker("l1")
	if out, ok := x.Ended(); x.Status != worker.StatusStopped || !ok || out.Reason != supervise.ReasonLost {
		l.fatalf("l1", "state.json after the look: %s, %+v; want stopped, %s", x.Status, out, supervise.ReasonLost)
	}
}

func TestInterruptedSpawn(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	// spawnDyingAt runs a spawn whose process dies at step: its goroutine ends there, as the
	// process would (its deferred unlock runs, as the kernel releases a dead process's lock).
	spawnDyingAt := func(step, name string) {
		o := l.opts
		o.Checkpoint = func(s string) {
			if s == step {
				runtime.Goexit()
			}
		}
		sw, err := Open(l.dir, o)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			sw.Spawn(ctx, Spec{Name: name, Cmd: []string{l.agent}})
			t.Errorf("the spawn of %s went past %q", name, step)
		}()
		<-done
	}

	// Died once the worker was in state.json: the next Load undoes what it made.
	spawnDyingAt("state", "c1")
	if w, _ := l.sw.Worker("c1"); w == nil || !w.Metadata.Has(metaSpawning) {
		l.fatalf("c1", "the spawn that died left no journal")
	}
	st, err := l.sw.Load(ctx)
	if err != nil || st.Get("c1") != nil {
		l.fatalf("c1", "Load after the spawn died = %v; c1 is still there", err)
	}
	if !strings.Contains(l.warnings.String(), "the spawn of 'c1' was interrupted; removed what it had made") {
		l.fatalf("c1", "no warning that c1's spawn was undone")
	}
	if _, err := os.Stat(l.sw.Dir().StderrLog("c1")); err == nil {
		t.Errorf("the undone spawn left logs/c1.stderr.log")
	}

	// Died once the supervisor had its spec: the worker runs, and a look makes it whole (once
	// the supervisor has registered: it holds the name's lock meanwhile).
	spawnDyingAt("launched", "c2")
	var w *worker.Worker
	l.waitFor("c2", "c2 made whole", func() bool {
		st, err := l.sw.Load(ctx)
		w = st.Get("c2")
		return err == nil && w != nil && !w.Metadata.Has(metaSpawning)
	})
	var supPID int
	if !w.Meta(worker.MetaSupervisorPID, &supPID) || w.PID == nil || int(*w.PID) != supPID || !l.sw.Live(ctx, w).Running {
		l.fatalf("c2", "c2 after its spawn was finished: %+v, supervisor %d", w, supPID)
	}
	l.waitScreen(w, "agent ready")
	l.sw.Stop(ctx, w)
}

func TestSpawnRefused(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	bad := "a/b"
	for _, c := range []struct {
		name   string
		sw     func() *Swarm
		spec   Spec
		want   string
		undone bool
	}{
		{"bad name", nil, Spec{Name: "a b", Cmd: []string{l.agent}}, "invalid worker name", false},
		{"digits in tmux", nil, Spec{Name: "123", Cmd: []string{l.agent}, Tmux: &TmuxSpec{}}, "all digits", false},
		{"no command", nil, Spec{Name: "x"}, "no command", false},
		{"bad socket", nil, Spec{Name: "x", Cmd: []string{l.agent}, Tmux: &TmuxSpec{Socket: &bad}}, "invalid tmux socket name 'a/b'", true},
		{"no supervisor", func() *Swarm {
			o := l.opts
			o.Supervisor = nil
			sw, _ := Open(l.dir, o)
			return sw
		}, Spec{Name: "x", Cmd: []string{l.agent}}, "failed to spawn process: no supervisor command", true},
		{"no repository", nil, Spec{Name: "x", Cmd: []string{l.agent}, Worktree: &WorktreeSpec{Repo: "/"}}, "not in a git repository", false},
	} {
		sw := l.sw
		if c.sw != nil {
			sw = c.sw()
		}
		_, err := sw.Spawn(ctx, c.spec)
		var undone *UndoneError
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.As(err, &undone) != c.undone {
			t.Errorf("%s: Spawn = %v, want %q (undone: %v)", c.name, err, c.want, c.undone)
		}
		if w, _ := l.sw.Worker(c.spec.Name); w != nil {
			l.fatalf(c.spec.Name, "%s: a refused spawn left %s in state.json", c.name, c.spec.Name)
		}
		if e, _ := l.sw.layout.ReadEntry(c.spec.Name); e != nil {
			l.fatalf(c.spec.Name, "%s: a refused spawn left a supervisor's entry", c.name)
		}
	}
	// A name that is taken.
	w, err := l.sw.Spawn(ctx, Spec{Name: "d1", Cmd: []string{l.agent}})
	if err != nil {
		l.fatalf("d1", "Spawn(d1) = %v", err)
	}
	if _, err := l.sw.Spawn(ctx, Spec{Name: "d1", Cmd: []string{l.agent}}); err == nil || err.Error() != "worker 'd1' already exists" {
		t.Errorf("a second Spawn(d1) = %v, want already exists", err)
	}
	l.sw.Stop(ctx, w)
}
