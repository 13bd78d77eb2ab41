package aiwg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
)

// TestMain makes the test binary a loop's background controller and an iteration's supervisor
// too, as cmd/ralph's hidden verbs are: a loop started here starts it again as "BINARY start
// __run ID" (RunLoop) and "BINARY start __supervise --state-dir DIR --handoff H BEAD"
// (attempt.Supervise).
func TestMain(m *testing.M) {
	if len(os.Args) > 3 && os.Args[1] == "start" && os.Args[2] == "__run" {
		wd, _ := os.Getwd()
		status, err := FindWorkspace(wd).RunLoop(context.Background(), os.Args[3], testRuntime(os.Stderr))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "loop %s: %s\n", os.Args[3], status)
		os.Exit(0)
	}
	if len(os.Args) > 2 && os.Args[1] == "start" && os.Args[2] == supervise.SuperviseVerb {
		os.Exit(testenv.Supervisor(os.Args[3:], func(ctx context.Context, a cli.SupervisorArgs, _ *os.File) error {
			return attempt.Supervise(ctx, a.StateDir, a.Handoff, a.Name, os.Stdout, nil)
		}))
	}
	os.Exit(sweep.Guard(m).Run())
}

// testRuntime is the Runtime cmd/ralph gives a loop, with the test binary as the program and
// the agents config that $AIWG_TEST_CONFIG names (the lab's, in the processes it starts).
func testRuntime(log io.Writer) Runtime {
	return Runtime{
		Agent: func(spec string) (*agent.Profile, agent.Model, error) {
			cfg, err := agent.Load(os.Getenv("AIWG_TEST_CONFIG"))
			if err != nil {
				return nil, agent.Model{}, err
			}
			name, model, _ := strings.Cut(spec, ":")
			p, err := cfg.Lookup(name)
			if err != nil {
				return nil, agent.Model{}, err
			}
			return p, p.Model(model, func(string) string { return "" }), nil
		},
		Controller: []string{os.Args[0], "start", "__run"},
		Supervisor: func(dir string) []string {
			return []string{os.Args[0], "start", supervise.SuperviseVerb, "--state-dir", dir}
		},
		Env:       os.Environ(),
		Log:       log,
		SealDir:   os.Getenv("AIWG_TEST_SEALS"),
		Heartbeat: 200 * time.Millisecond,
	}
}

// lab is a loop's surroundings: a git repository (the workspace) with one tracked file, an
// agents config whose "fake" agent is testdata/agent.sh, driven by a plan of lines (one per
// call of the agent), and a directory outside the repository for the agent's own files and
// the test's markers.
type lab struct {
	t        *testing.T
	ws       Workspace
	rt       Runtime
	agentDir string
	out      string // markers, outside the repository
	// controllers are the background controllers the lab started, as their states named them
	// at the start: one that has written its last state may still be at work (its registry
	// entry, its log) when a test ends, and must be gone before the test's directory is
	// removed.
	controllers []State
}

func newLab(t *testing.T, plan ...string) *lab {
	t.Helper()
	tmp := t.TempDir()
	l := &lab{t: t, ws: Workspace{Root: filepath.Join(tmp, "repo")}, agentDir: filepath.Join(tmp, "agent"), out: filepath.Join(tmp, "out")}
	if err := testenv.GitRepo(l.ws.Root); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(l.ws.Root, "tracked.txt"), []byte("as committed\n"), 0o644)
	l.git("add", "tracked.txt")
	l.git("commit", "-q", "-m", "tracked")
	os.MkdirAll(l.out, 0o700)
	agentSh, err := filepath.Abs("testdata/agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(tmp, "agents.json")
	os.WriteFile(config, fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}}`, agentSh), 0o600)
	planFile := filepath.Join(tmp, "plan")
	os.WriteFile(planFile, []byte(strings.ReplaceAll(strings.Join(plan, "\n"), "OUT/", l.out+"/")+"\n"), 0o600)
	l.rt = testRuntime(io.Discard)
	l.rt.SealDir = filepath.Join(tmp, "seals") // outside the workspace, as $SWARM_DIR/aiwg
	l.rt.Env = append(os.Environ(), "AIWG_TEST_CONFIG="+config, "AIWG_AGENT_DIR="+l.agentDir, "AIWG_PLAN="+planFile,
		"AIWG_TEST_SEALS="+l.rt.SealDir)
	// This process resolves the agent at the start too.
	t.Setenv("AIWG_TEST_CONFIG", config)
	t.Cleanup(func() {
		if t.Failed() {
			l.dump()
		}
		l.killAll()
	})
	return l
}

func (l *lab) git(args ...string) string {
	l.t.Helper()
	out, err := git(context.Background(), l.ws.Root, args...)
	if err != nil {
		l.t.Fatal(err)
	}
	return string(out)
}

// refused checks that err is a refusal saying what matches re.
func (l *lab) refused(err error, re string) {
	l.t.Helper()
	if err == nil || !regexp.MustCompile(re).MatchString(err.Error()) {
		l.t.Errorf("got %v, want a refusal matching %q", err, re)
	}
}

// start starts a loop in the background with the fake agent and ralph start's defaults, and
// returns its id.
func (l *lab) start(task, completion string) string {
	l.t.Helper()
	st, err := l.ws.Start(context.Background(), StartSpec{Task: task, Completion: completion, MaxIterations: 200,
		CheckpointInterval: 1, Timeout: time.Hour, Agent: "fake"}, l.rt)
	if err != nil {
		l.t.Fatalf("Start: %v", err)
	}
	if st.PID == nil || *st.PID == os.Getpid() {
		l.t.Fatalf("Start: controller %v, want a background one", st.PID)
	}
	l.controllers = append(l.controllers, *st)
	return st.LoopID
}

func (l *lab) state(id string) *State {
	l.t.Helper()
	st, err := l.ws.ReadState(id)
	if err != nil {
		l.t.Fatal(err)
	}
	return st
}

func (l *lab) registry() *Registry {
	l.t.Helper()
	reg, err := l.ws.readRegistry()
	if err != nil {
		l.t.Fatal(err)
	}
	return reg
}

// marker is the path of a marker file the agent makes (OUT/name in the plan).
func (l *lab) marker(name string) string { return filepath.Join(l.out, name) }

// waitFile waits until the file at path exists.
func (l *lab) waitFile(path string) {
	l.t.Helper()
	l.waitUntil("the agent made "+filepath.Base(path), func() bool { _, err := os.Stat(path); return err == nil })
}

// waitStatus waits until loop id's state says status.
// waitStatus waits until loop id has status, and the change that wrote it is whole: the
// controller writes the state, then the registry, under the workspace's lock, which is taken
// once the state says status (a registry read in between saw the loop still active: 1 run in
// 5 of make test under two busy loops).
func (l *lab) waitStatus(id, status string) *State {
	l.t.Helper()
	var st *State
	l.waitUntil("loop "+id+" "+status, func() bool {
		var err error
		st, err = l.ws.ReadState(id)
		return err == nil && st.Status == status
	})
	unlock, err := fsx.LockFile(context.Background(), l.ws.LockPath())
	if err != nil {
		l.t.Fatalf("taking the workspace's lock: %v", err)
	}
	unlock()
	return st
}

func (l *lab) waitUntil(what string, cond func() bool) {
	l.t.Helper()
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	l.t.Fatalf("%s: not after 90 s", what)
}

// calls is how many times the agent has been started.
func (l *lab) calls() string {
	b, _ := os.ReadFile(filepath.Join(l.agentDir, "count"))
	return strings.TrimSpace(string(b))
}

// supervisor is the registry's entry of bead's supervisor (a zero one for none).
func (l *lab) supervisor(st *State, bead string) supervise.Entry {
	e, _ := attempt.NewDir(st.StateDir).Layout.ReadEntry(bead)
	if e == nil {
		return supervise.Entry{}
	}
	return *e
}

// settled checks what pause and abort promise once they return: the status, no controller
// recorded, the old one gone, no supervisor of the loop alive, so no agent can start.
func (l *lab) settled(id, status string, oldPID int, oldStart uint64) {
	l.t.Helper()
	st := l.state(id)
	if st.Status != status || st.PID != nil {
		l.t.Errorf("loop %s: %s, pid %v; want %s and no controller", id, st.Status, st.PID, status)
	}
	if controllerAlive(&State{LoopID: id, PID: &oldPID, PIDStart: oldStart}) {
		l.t.Errorf("loop %s: its controller %d still lives", id, oldPID)
	}
	d := attempt.NewDir(st.StateDir)
	for i := 1; i <= st.Iteration+1; i++ {
		if live, _ := attempt.Alive(context.Background(), d, attempt.Where{Backend: supervise.BackendProcess}, Bead(id, i)); live {
			l.t.Errorf("loop %s: the supervisor of iteration %d still lives", id, i)
		}
	}
}

// killAll kills what a failed test left running: controllers and supervisors.
func (l *lab) killAll() {
	controllers := l.controllers
	for _, id := range l.ws.Loops() {
		if st, err := l.ws.ReadState(id); err == nil {
			controllers = append(controllers, *st)
		}
	}
	for i := range controllers {
		if controllerAlive(&controllers[i]) {
			syscall.Kill(*controllers[i].PID, syscall.SIGKILL)
		}
	}
	layout := supervise.Layout{Dir: l.ws.DefaultStateDir()}
	supervisors := map[string]int{}
	for _, name := range layout.Registered(func(string) bool { return true }) {
		if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
			syscall.Kill(e.PID, syscall.SIGKILL)
			supervisors[name] = e.PID
		}
	}
	// Killed is not gone: what a controller or a supervisor does until it is (its log, its
	// registry entry) would land in the test's directory while it is removed.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		alive := false
		for i := range controllers {
			alive = alive || controllerAlive(&controllers[i])
		}
		for name, pid := range supervisors {
			alive = alive || supervise.SupervisorAlive(pid, name)
		}
		if !alive {
			return
		}
	}
}

// dump prints the loops' states, their controllers' logs and their agents' output.
func (l *lab) dump() {
	for _, id := range l.ws.Loops() {
		b, _ := os.ReadFile(l.ws.StatePath(id))
		c, _ := os.ReadFile(filepath.Join(l.ws.LoopDir(id), "controller.log"))
		l.t.Logf("loop %s:\n%s\ncontroller.log:\n%s", id, b, c)
	}
	logs, _ := filepath.Glob(filepath.Join(l.ws.DefaultStateDir(), "logs", "*.log"))
	for _, p := range logs {
		b, _ := os.ReadFile(p)
		l.t.Logf("%s:\n%s", p, b)
	}
}

// TestPauseResume: pause stops the iteration in flight and no other starts (once pause has
// returned, no controller and no supervisor of the loop lives); a second pause changes
// nothing; resume runs the stopped iteration again under a new controller, which completes
// the loop; a completed loop can be neither aborted, resumed nor paused (seed 003's table).
func TestPauseResume(t *testing.T) {
	l := newLab(t, "touch=OUT/m1 sleep=60", "touch=done.txt cost=0.05")
	id := l.start("Pausable", "test -f done.txt")
	l.waitFile(l.marker("m1"))
	before := l.state(id)
	if before.Status != StatusRunning || before.PID == nil || !controllerAlive(before) {
		t.Fatalf("a started loop: %s, pid %v; want running under a live controller", before.Status, before.PID)
	}

	ctx := context.Background()
	st, err := l.ws.Pause(ctx, id)
	if err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if st.Metrics.TotalIterations != 0 || st.Configuration.MaxIterations != 200 {
		t.Errorf("Pause returned %d of at most %d iterations, want 0 of 200", st.Metrics.TotalIterations, st.Configuration.MaxIterations)
	}
	l.settled(id, StatusPaused, *before.PID, before.PIDStart)
	st = l.state(id)
	// The iteration stopped in flight keeps its number (it went 1 → 0 before, issue 19).
	if st.PauseReason != PauseUser || st.Iteration != 1 || st.NextIteration() != 1 || len(st.Iterations) != 1 || st.Iterations[0].Outcome != OutcomeInterrupted {
		t.Errorf("paused: reason %q, iteration %d, iterations %+v; want user, 1 (run again next), one interrupted", st.PauseReason, st.Iteration, st.Iterations)
	}
	if l.calls() != "1" {
		t.Errorf("the agent was started %s times, want 1", l.calls())
	}
	if reg := l.registry(); len(reg.ActiveLoops) != 1 || reg.ActiveLoops[0].Status != StatusPaused {
		t.Errorf("registry: %+v, want the loop active and paused", reg.ActiveLoops)
	}

	doc, _ := os.ReadFile(l.ws.StatePath(id))
	if _, err := l.ws.Pause(ctx, id); err != nil {
		t.Fatalf("a second Pause: %v", err)
	}
	if again, _ := os.ReadFile(l.ws.StatePath(id)); !bytes.Equal(again, doc) {
		t.Errorf("a second pause changed the state")
	}

	res, err := l.ws.Resume(ctx, id, ResumeSpec{}, l.rt)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if res.From != StatusPaused || res.Foreground || res.State.NextIteration() != 1 {
		t.Errorf("Resume = from %s, foreground %v, iteration %d; want from paused, in the background, iteration 1 next", res.From, res.Foreground, res.State.Iteration)
	}
	st = l.state(id)
	if st.Status != StatusRunning || st.PID == nil || *st.PID == *before.PID || st.PauseReason != "" {
		t.Errorf("resumed: %s, pid %v (before %d), reason %q; want running under a new controller", st.Status, st.PID, *before.PID, st.PauseReason)
	}
	_, err = l.ws.Resume(ctx, id, ResumeSpec{}, l.rt)
	l.refused(err, `is running \(controller pid [0-9]+\): nothing to resume`)

	st = l.waitStatus(id, StatusCompleted)
	if st.PID != nil || st.CompletedAt == nil || st.ExitReason != StatusCompleted || st.Metrics.TotalIterations != 1 || st.Metrics.SuccessfulIterations != 1 {
		t.Errorf("completed: pid %v, completed_at %v, exit %q, metrics %+v", st.PID, st.CompletedAt, st.ExitReason, st.Metrics)
	}
	if n := len(st.Iterations); n != 2 || st.Iterations[1].Outcome != OutcomeDone || st.Iterations[1].Attempt != 2 || st.Iterations[1].Bead != Bead(id, 1) {
		t.Errorf("iterations: %+v; want iteration 1 stopped, then run again as attempt 2 and done", st.Iterations)
	}
	if reg := l.registry(); len(reg.ActiveLoops) != 0 || reg.TotalCompleted != 1 {
		t.Errorf("registry: %d active, %d completed; want 0 and 1", len(reg.ActiveLoops), reg.TotalCompleted)
	}

	_, err = l.ws.Abort(ctx, id)
	l.refused(err, `^loop `+id+` is completed: completed → aborted is not an allowed status change \(completed is final\)$`)
	_, err = l.ws.Resume(ctx, id, ResumeSpec{}, l.rt)
	l.refused(err, `completed → running is not an allowed status change`)
	_, err = l.ws.Pause(ctx, id)
	l.refused(err, `completed → paused is not an allowed status change`)
	if !errors.Is(err, ErrTransition) {
		t.Errorf("Pause of a completed loop: %v, want ErrTransition", err)
	}
	if after := l.state(id); after.Status != StatusCompleted {
		t.Errorf("after the refusals: %s", after.Status)
	}
}

// TestAbort: abort ends a loop for good (its controller and its agent gone once it returns);
// --keep-changes leaves the working tree as the agent left it, --revert resets it to where the
// loop started (the commit, the tracked files, the untracked files there then kept and the
// loop's removed).
func TestAbort(t *testing.T) {
	for _, revert := range []bool{false, true} {
		name := "keep-changes"
		if revert {
			name = "revert"
		}
		t.Run(name, func(t *testing.T) {
			l := newLab(t, "touch=new.txt write=tracked.txt touch=OUT/m1 sleep=60")
			os.WriteFile(filepath.Join(l.ws.Root, "untracked-before.txt"), []byte("was there\n"), 0o644)
			head := strings.TrimSpace(l.git("rev-parse", "HEAD"))
			id := l.start("Abortable", "false")
			l.waitFile(l.marker("m1"))
			before := l.state(id)

			ctx := context.Background()
			st, err := l.ws.Abort(ctx, id)
			if err != nil {
				t.Fatalf("Abort: %v", err)
			}
			if st.Metrics.TotalIterations != 0 {
				t.Errorf("Abort returned %d iterations, want 0", st.Metrics.TotalIterations)
			}
			if revert {
				if err := l.ws.Revert(ctx, st, l.rt); err != nil {
					t.Fatalf("Revert: %v", err)
				}
				if st.StartCommit != head {
					t.Errorf("the loop started at %s, HEAD was %s", st.StartCommit, head)
				}
			}
			l.settled(id, StatusAborted, *before.PID, before.PIDStart)
			if st := l.state(id); st.ExitReason != StatusAborted {
				t.Errorf("exit_reason %q, want aborted", st.ExitReason)
			}
			if reg := l.registry(); len(reg.ActiveLoops) != 0 || reg.TotalAborted != 1 {
				t.Errorf("registry: %d active, %d aborted; want 0 and 1", len(reg.ActiveLoops), reg.TotalAborted)
			}
			tracked, _ := os.ReadFile(filepath.Join(l.ws.Root, "tracked.txt"))
			_, newErr := os.Stat(filepath.Join(l.ws.Root, "new.txt"))
			if _, err := os.Stat(filepath.Join(l.ws.Root, "untracked-before.txt")); err != nil {
				t.Errorf("the untracked file of the start is gone: %v", err)
			}
			if revert {
				if string(tracked) != "as committed\n" || newErr == nil {
					t.Errorf("after --revert: tracked.txt %q, new.txt there: %v", tracked, newErr == nil)
				}
			} else if string(tracked) == "as committed\n" || newErr != nil {
				t.Errorf("after --keep-changes: tracked.txt %q, new.txt: %v; want the agent's changes", tracked, newErr)
			}
			_, err = l.ws.Resume(ctx, id, ResumeSpec{}, l.rt)
			l.refused(err, `aborted → running is not an allowed status change \(aborted is final\)`)
		})
	}
}

// TestCrashFoundOnNextLook: a loop whose controller died is still "running" on disk until
// someone looks; the next look records it crashed (the registry counts it, its agent's
// supervisor, which outlived it, still works). resume restores it from its last checkpoint,
// stops that supervisor first, and runs the iterations after the checkpoint again.
func TestCrashFoundOnNextLook(t *testing.T) {
	l := newLab(t, "cost=0.01", "touch=OUT/m2 sleep=60", "touch=done.txt cost=0.02")
	id := l.start("Crashy", "test -f done.txt")
	l.waitFile(l.marker("m2"))
	st := l.state(id)
	if st.Iteration != 2 || st.LastCheckpoint == nil {
		t.Fatalf("iteration %d, checkpoint %v; want iteration 2 running after checkpoint 1", st.Iteration, st.LastCheckpoint)
	}
	pid := *st.PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Gone for good (reaped by StartDetached's waiter in this process), not merely unreadable
	// for an instant while it exits: the look below must find it gone too (under load the
	// look once still found it running).
	l.waitUntil("the controller dead", func() bool { return !proc.Alive(pid) && !controllerAlive(st) })
	if now := l.state(id); now.Status != StatusRunning {
		t.Fatalf("before any look the state says %s, want running (nothing has looked yet)", now.Status)
	}
	sup := l.supervisor(st, Bead(id, 2))
	if !supervise.SupervisorAlive(sup.PID, Bead(id, 2)) || !proc.Alive(sup.AgentPID) {
		t.Fatalf("iteration 2's supervisor or agent died with its controller: %+v", sup)
	}

	ctx := context.Background()
	st, err := l.ws.Look(ctx, id)
	if err != nil {
		t.Fatalf("Look: %v", err)
	}
	var out bytes.Buffer
	WriteStatus(&out, st, time.Now())
	if !regexp.MustCompile(`(?m)^Status: +crashed$`).MatchString(out.String()) ||
		!strings.Contains(out.String(), fmt.Sprintf("the controlling process (pid %d) is gone", pid)) {
		t.Errorf("status after the crash: %q", out.String())
	}
	if st.Status != StatusCrashed || st.ExitReason != StatusCrashed || st.PID != nil || st.ErrorContext == nil || st.ErrorContext.RecoveryAttempted {
		t.Errorf("crashed: %s, %q, pid %v, error %+v", st.Status, st.ExitReason, st.PID, st.ErrorContext)
	}
	if reg := l.registry(); len(reg.ActiveLoops) != 0 || reg.TotalCrashed != 1 {
		t.Errorf("registry: %d active, %d crashed; want 0 and 1", len(reg.ActiveLoops), reg.TotalCrashed)
	}

	res, err := l.ws.Resume(ctx, id, ResumeSpec{}, l.rt)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if cp := CheckpointRel(id, 1); res.From != StatusCrashed || res.State.LastCheckpoint == nil || *res.State.LastCheckpoint != cp || res.State.Iteration != 1 {
		t.Errorf("Resume = from %s, checkpoint %v, iteration %d; want from crashed, restored from %s, iteration 2 next", res.From, res.State.LastCheckpoint, res.State.Iteration, cp)
	}
	if start, ok := proc.StartTime(sup.AgentPID); ok && start == sup.AgentStart {
		t.Errorf("the agent whose supervisor outlived the controller still works after resume")
	}
	st = l.waitStatus(id, StatusCompleted)
	if st.ErrorContext == nil || !st.ErrorContext.RecoveryAttempted || st.Metrics.TotalIterations != 2 || st.Metrics.TotalCostUSD != 0.03 {
		t.Errorf("completed after the restore: error %+v, metrics %+v; want recovery_attempted, 2 iterations, $0.03", st.ErrorContext, st.Metrics)
	}
	run, err := record.ReadRun(filepath.Join(st.StateDir, "runs", Bead(id, 2)+".json"))
	if err != nil || run.Attempt != 2 || run.Status != record.StatusDone {
		t.Errorf("iteration 2's run record: %+v, %v; want attempt 2, done", run, err)
	}
	stopped, err := record.ReadRun(filepath.Join(st.StateDir, "attempts", Bead(id, 2), "run-1.json"))
	if err != nil || stopped.Status != record.StatusFailed || stopped.FailureReason == nil || *stopped.FailureReason != "killed" {
		t.Errorf("iteration 2's first attempt: %+v, %v; want failed, killed", stopped, err)
	}
	if l.calls() != "3" {
		t.Errorf("the agent was started %s times, want 3", l.calls())
	}
}

// TestCrashKeepsCost: the cost the agent of the iteration in flight reported before its
// controller crashed is kept in the totals after resume (it was lost, issue 19), and that
// iteration is recorded, interrupted.
func TestCrashKeepsCost(t *testing.T) {
	l := newLab(t, "cost=0.01", "cost=0.04 touch=OUT/m2 sleep=60", "touch=done.txt cost=0.02")
	id := l.start("Costly", "test -f done.txt")
	l.waitFile(l.marker("m2"))
	st := l.state(id)
	pid := *st.PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	l.waitUntil("the controller dead", func() bool { return !proc.Alive(pid) && !controllerAlive(st) })
	ctx := context.Background()
	if _, err := l.ws.Look(ctx, id); err != nil {
		t.Fatalf("Look: %v", err)
	}
	res, err := l.ws.Resume(ctx, id, ResumeSpec{}, l.rt)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got := res.State.Metrics.TotalCostUSD; math.Abs(got-0.05) > 1e-9 || res.State.NextIteration() != 2 {
		t.Errorf("resumed: cost $%v, iteration %d next; want $0.05 (iteration 1 and the one in flight), 2", got, res.State.NextIteration())
	}
	st = l.waitStatus(id, StatusCompleted)
	if got := st.Metrics.TotalCostUSD; math.Abs(got-0.07) > 1e-9 || st.Metrics.TotalIterations != 2 {
		t.Errorf("completed: metrics %+v; want $0.07 spent over 2 counted iterations", st.Metrics)
	}
	var in *Iteration
	for k := range st.Iterations {
		if it := &st.Iterations[k]; it.Number == 2 && it.Outcome == OutcomeInterrupted {
			in = it
		}
	}
	if in == nil || in.CostUSD == nil || *in.CostUSD != 0.04 {
		t.Errorf("iterations: %+v; want iteration 2's first attempt interrupted, $0.04", st.Iterations)
	}
}

// TestPausedControllerGone: a paused loop needs no controller; one found gone just loses its
// pid, and the loop stays paused (a status change would be refused: paused → crashed is not
// in the table).
func TestPausedControllerGone(t *testing.T) {
	l := newLab(t)
	id := "ralph-gone-12345678"
	pid := deadProcess(t)
	st := testState(id, 0)
	st.WorkingDirectory, st.StateDir = l.ws.Root, l.ws.DefaultStateDir()
	st.Status, st.PID = StatusPaused, &pid
	if err := os.MkdirAll(l.ws.LoopDir(id), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := l.ws.Locked(context.Background(), func(reg *Registry) error { return l.ws.save(reg, st) }); err != nil {
		t.Fatal(err)
	}
	if err := l.ws.Sweep(context.Background(), []string{id}); err != nil {
		t.Fatal(err)
	}
	if got := l.state(id); got.Status != StatusPaused || got.PID != nil {
		t.Errorf("after the look: %s, pid %v; want paused without a pid", got.Status, got.PID)
	}
}

// deadProcess is the pid of a process that ran and is gone (reaped).
func deadProcess(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if proc.Alive(cmd.Process.Pid) {
		t.Skip("the pid was taken again at once")
	}
	return cmd.Process.Pid
}

// TestRevertTrustsOnlyTheSeal (issue 27): the agent of a loop started after a commit of the
// user's points state.json's start_commit at the commit before it and empties
// untracked-at-start; abort --revert is refused and touches nothing: HEAD, the user's commit,
// the untracked file of the start and the agent's work are as they were. A branch moved off
// the start (HEAD no longer descends from it) is refused too.
func TestRevertTrustsOnlyTheSeal(t *testing.T) {
	l := newLab(t, "write=tracked.txt rewind touch=OUT/m1 sleep=60")
	os.WriteFile(filepath.Join(l.ws.Root, "mine.txt"), []byte("the user's\n"), 0o644)
	l.git("add", "mine.txt")
	l.git("commit", "-q", "-m", "the user's own commit, before the loop")
	start := strings.TrimSpace(l.git("rev-parse", "HEAD"))
	os.WriteFile(filepath.Join(l.ws.Root, "untracked-before.txt"), []byte("was there\n"), 0o644)
	id := l.start("Rewound", "false")
	l.waitFile(l.marker("m1"))
	ctx := context.Background()
	st, err := l.ws.Abort(ctx, id)
	if err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if st.StartCommit == start {
		t.Fatalf("the agent did not rewrite start_commit (%s)", st.StartCommit)
	}
	intact := func(what string) {
		t.Helper()
		if head := strings.TrimSpace(l.git("rev-parse", "HEAD")); head != start {
			t.Errorf("%s: HEAD is %s, want %s as it was", what, head, start)
		}
		for _, f := range []string{"mine.txt", "untracked-before.txt"} {
			if _, err := os.Stat(filepath.Join(l.ws.Root, f)); err != nil {
				t.Errorf("%s: %s is gone: %v", what, f, err)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(l.ws.Root, "tracked.txt")); string(b) == "as committed\n" {
			t.Errorf("%s: the agent's change of tracked.txt was reverted", what)
		}
	}
	l.refused(l.ws.Revert(ctx, st, l.rt), `nothing is reverted: state.json's start .* changed behind ralph's back`)
	intact("start_commit rewritten")

	// state.json put right again, the list of untracked files still emptied.
	path := filepath.Join(l.ws.LoopDir(id), "state.json")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(b, []byte(st.StartCommit), []byte(start), 1), 0o600)
	st = l.state(id)
	l.refused(l.ws.Revert(ctx, st, l.rt), `nothing is reverted: untracked-at-start is not the list .* sealed`)
	intact("untracked-at-start emptied")

	// The branch moved off the start: a commit on the one before it.
	os.WriteFile(filepath.Join(l.ws.LoopDir(id), untrackedFile), []byte("untracked-before.txt\x00"), 0o600)
	l.git("reset", "-q", "--soft", "HEAD~1")
	l.git("commit", "-q", "-m", "elsewhere")
	moved := strings.TrimSpace(l.git("rev-parse", "HEAD"))
	l.refused(l.ws.Revert(ctx, st, l.rt), `nothing is reverted: HEAD of .* does not descend from the loop's start`)
	if head := strings.TrimSpace(l.git("rev-parse", "HEAD")); head != moved {
		t.Errorf("the refused revert moved HEAD to %s", head)
	}
}

// TestRegistryHeartbeat: a loop's registry entry has a heartbeat, last_active (seed 003's
// update_registry_heartbeat; the registry had none, issue 27): the time of its last state
// update, and while an iteration runs, its controller's beat.
func TestRegistryHeartbeat(t *testing.T) {
	l := newLab(t, "await=OUT/go")
	id := l.start("Beating", "false")
	lastActive := func() string {
		b, _ := os.ReadFile(filepath.Join(l.ws.Dir(), "registry.json"))
		var reg struct {
			ActiveLoops []map[string]any `json:"active_loops"`
		}
		json.Unmarshal(b, &reg)
		for _, e := range reg.ActiveLoops {
			if e["loop_id"] == id {
				s, _ := e["last_active"].(string)
				return s
			}
		}
		return ""
	}
	first := lastActive()
	if _, ok := parseStamp(first); !ok {
		t.Fatalf("the registry entry of a started loop has last_active %q, want a time", first)
	}
	// The agent waits for the test: no state update meanwhile, only the controller's beat.
	l.waitFile(filepath.Join(l.agentDir, "prompt-1.txt"))
	updated := l.state(id).LastUpdated
	l.waitUntil("last_active to move on past last_updated while the iteration runs", func() bool {
		t1, _ := parseStamp(updated)
		t2, ok := parseStamp(lastActive())
		return ok && t2.After(t1)
	})
	if now := l.state(id).LastUpdated; now != updated {
		t.Errorf("the state was updated (%s, then %s) while the agent waited: the beat is not told apart", updated, now)
	}
	os.WriteFile(l.marker("go"), nil, 0o644)
}

// TestLegacyCurrentLoop: AIWG's single-loop current-loop.json (seed 003's backward
// compatibility; not read before, issue 27) is taken in once: its running loop is registered
// paused under an id made from its task, its fields converted, the legacy file kept; resume
// runs it here to its end. A second look takes nothing in again.
func TestLegacyCurrentLoop(t *testing.T) {
	l := newLab(t, "touch=done.txt")
	os.MkdirAll(l.ws.Dir(), 0o700)
	legacy := filepath.Join(l.ws.Dir(), LegacyFile)
	os.WriteFile(legacy, []byte(`{"loopId": "loop-1738530000000", "active": true, "task": "Fix the build",
  "completion": "test -f done.txt", "maxIterations": 10, "timeoutMinutes": 60, "timeoutMs": 3600000,
  "startTime": "2026-02-02T21:00:00.000Z", "startTimeMs": 1738530000000, "currentIteration": 2,
  "autoCommit": true, "branch": null, "completed": false, "status": "running", "iterations": [], "lastResult": null, "learnings": []}`), 0o600)
	ctx := context.Background()
	id, err := l.ws.MigrateLegacy(ctx, l.rt, "fake")
	if err != nil || !strings.HasPrefix(id, "ralph-fix-the-build-") || !IsLoopID(id) {
		t.Fatalf("MigrateLegacy = %q, %v; want a loop id ralph-fix-the-build-…", id, err)
	}
	st := l.state(id)
	if st.Status != StatusPaused || st.PauseReason != PauseMigrated || st.Task != "Fix the build" ||
		st.CompletionCriteria != "test -f done.txt" || st.Configuration.MaxIterations != 10 || st.TimeoutSeconds != 3600 ||
		st.StartedAt != "2026-02-02T21:00:00Z" || st.Iteration != 2 {
		t.Errorf("the migrated state: %+v", st)
	}
	if reg := l.registry(); len(reg.ActiveLoops) != 1 || reg.ActiveLoops[0].LoopID != id {
		t.Errorf("registry: %+v, want the migrated loop active", reg.ActiveLoops)
	}
	if again, err := l.ws.MigrateLegacy(ctx, l.rt, "fake"); err != nil || again != id || len(l.ws.Loops()) != 1 {
		t.Errorf("a second MigrateLegacy = %q, %v, %d loops; want %q, nothing more", again, err, len(l.ws.Loops()), id)
	}
	if _, err := os.Stat(legacy); err != nil {
		t.Errorf("the legacy file is gone: %v", err)
	}
	if _, err := l.ws.Resume(ctx, id, ResumeSpec{}, l.rt); err != nil {
		t.Fatalf("Resume of the migrated loop: %v", err)
	}
	if end := l.waitStatus(id, StatusCompleted); end.Metrics.TotalIterations != 3 {
		t.Errorf("the migrated loop completed after %d iterations in all, want 3 (2 of AIWG's, 1 here)", end.Metrics.TotalIterations)
	}
}
