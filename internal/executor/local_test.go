package executor_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"golang.org/x/sys/unix"
)

// newLocal is a one-slot Local of w, closed when the test ends.
func newLocal(t *testing.T, w *world) *executor.Local {
	t.Helper()
	b, err := os.ReadFile(w.agents)
	if err != nil {
		t.Fatal(err)
	}
	agents, err := agent.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	l := &executor.Local{N: 1, StateDir: w.stateDir, Self: w.self(),
		Agents: agents, KillGrace: time.Second, HostName: "testhost"}
	t.Cleanup(l.Close)
	return l
}

// supervisorsOf are the pids the agents appended to file (ppid:), one a line.
func supervisorsOf(t *testing.T, file string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(readFile(file)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q", file, f)
		}
		pids = append(pids, pid)
	}
	return pids
}

// waitGone waits until pid has exited, through a pidfd (nothing polls), up to a minute.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(time.Minute/time.Millisecond)); n == 0 {
		t.Fatalf("%s (pid %d) still runs", what, pid)
	}
}

// TestLocalSlotKeepsItsSupervisor runs four tasks on one slot: one supervisor serves them all,
// and it exits once the executor lets it go.
func TestLocalSlotKeepsItsSupervisor(t *testing.T) {
	w := newWorld(t)
	l := newLocal(t, w)
	ppids := filepath.Join(t.TempDir(), "ppids")
	for i := range 4 {
		out := l.Run(context.Background(), l.Slots()[0], w.job(t, fmt.Sprintf("reuse%d", i), "ppid:"+ppids))
		if out.Status != record.StatusDone {
			t.Fatalf("task %d: outcome %+v, want done", i, out)
		}
	}
	pids := supervisorsOf(t, ppids)
	if len(pids) != 4 {
		t.Fatalf("the agents saw supervisors %v: want 4 lines", pids)
	}
	for _, p := range pids[1:] {
		if p != pids[0] {
			t.Fatalf("the agents' supervisors %v: want one serving the slot", pids)
		}
	}
	if syscall.Kill(pids[0], 0) != nil {
		t.Fatalf("the slot's supervisor %d is gone between tasks", pids[0])
	}
	l.Close()
	waitGone(t, pids[0], "the slot's supervisor, let go")
}

// TestLocalSupervisorCrashLosesItsAttempt kills a slot's supervisor mid-attempt: that attempt is
// lost (supervisor-lost, its agent gone), and the slot's next attempt runs under a new one.
func TestLocalSupervisorCrashLosesItsAttempt(t *testing.T) {
	w := newWorld(t)
	l := newLocal(t, w)
	tmp := t.TempDir()
	pid, ppids := filepath.Join(tmp, "pid"), filepath.Join(tmp, "ppids")
	done := make(chan executor.Outcome, 1)
	go func() {
		done <- l.Run(context.Background(), l.Slots()[0], w.job(t, "crash", "ppid:"+ppids+" pid:"+pid+" hang"))
	}()
	waitFile(t, pid, done)
	sup := supervisorsOf(t, ppids)[0]
	if !supervise.SupervisorAlive(sup, "x-crash") {
		t.Fatalf("the serving supervisor %d is not taken for x-crash's", sup)
	}
	if supervise.SupervisorAlive(sup, "x-after") {
		t.Fatalf("the serving supervisor %d is taken for x-after's, which it does not run", sup)
	}
	syscall.Kill(sup, syscall.SIGKILL)
	var out executor.Outcome
	select {
	case out = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its supervisor was killed")
	}
	if out.Status != record.StatusFailed || out.Reason != supervise.ReasonLost || out.Interrupted {
		t.Fatalf("outcome %+v, want failed %s", out, supervise.ReasonLost)
	}
	gone(t, pid)

	out = l.Run(context.Background(), l.Slots()[0], w.job(t, "after", "ppid:"+ppids))
	if out.Status != record.StatusDone {
		t.Fatalf("the next attempt: outcome %+v, want done", out)
	}
	if pids := supervisorsOf(t, ppids); len(pids) != 2 || pids[1] == sup {
		t.Fatalf("the agents' supervisors %v: want a new one after %d was killed", pids, sup)
	}
}

// TestLocalFilesPerAttempt counts the files an attempt creates in the state directory (an
// atomic write creates one: its temporary file), watched with inotify, for an attempt on a
// slot whose supervisor already serves: each create costs an inode, and ext4 makes each one
// dearer while freed ones pile up. A count that grows fails here.
func TestLocalFilesPerAttempt(t *testing.T) {
	w := newWorld(t)
	l := newLocal(t, w)
	if out := l.Run(context.Background(), l.Slots()[0], w.job(t, "warm", "")); out.Status != record.StatusDone {
		t.Fatalf("the first attempt: %+v", out)
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	defer unix.Close(fd)
	// Every directory of the state directory (the first attempt made them): a file created
	// anywhere in it is counted under its directory's path.
	watches := map[int32]string{}
	dirs := []string{}
	filepath.WalkDir(w.stateDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			rel, _ := filepath.Rel(w.stateDir, path)
			wd, err := unix.InotifyAddWatch(fd, path, unix.IN_CREATE)
			if err != nil {
				t.Fatalf("watching %s: %v", path, err)
			}
			watches[int32(wd)] = rel
			dirs = append(dirs, rel)
		}
		return nil
	})
	if out := l.Run(context.Background(), l.Slots()[0], w.job(t, "counted", "")); out.Status != record.StatusDone {
		t.Fatalf("the counted attempt: %+v", out)
	}
	created := map[string]int{}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			created[watches[ev.Wd]]++
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
	// What the lifecycle needs: the registry entry 3 times (the launch, the agent started, the
	// outcome until it is recorded), the run record twice (running, final), the result once,
	// one log, one control socket, and the bead's locks (a task's bead is new: its lock, its
	// run record's, its result's); no handoff socket, no disk reserve (the slot's is kept).
	want := map[string]int{"supervisors": 3, "runs": 2, "results": 1, "logs": 1, "sockets": 1,
		"locks": 1, "locks/runs": 1, "locks/results": 1}
	t.Logf("files created by one attempt, by directory: %v", created)
	for _, dir := range dirs {
		if created[dir] > want[dir] {
			t.Errorf("%s: %d files created by one attempt, want at most %d (all: %v)", dir, created[dir], want[dir], created)
		}
	}
}

// TestLocalSupervisorOutlivesItsRunner SIGKILLs a runner once its slot's supervisor has the
// attempt: the supervisor runs it to its recorded end, then exits, having no runner to serve.
func TestLocalSupervisorOutlivesItsRunner(t *testing.T) {
	w := newLocalWorld(t)
	tmp := t.TempDir()
	ppids, gate := filepath.Join(tmp, "ppids"), filepath.Join(tmp, "gate")
	j := w.job(t, "orphan", "ppid:"+ppids+" waitfor:"+gate)
	n := w.killedRun(t, j, "launched")
	waitFor(t, ppids, "\n")
	sup := supervisorsOf(t, ppids)[0]
	if !supervise.SupervisorAlive(sup, j.Bead) {
		t.Fatalf("the slot's supervisor %d is gone with its runner", sup)
	}
	os.WriteFile(gate, nil, 0o600)
	waitGone(t, sup, "the slot's supervisor, its runner gone and its attempt ended")
	run, err := record.ReadRun(record.Store{Dir: w.stateDir}.RunPath(j.Bead))
	if err != nil || run.Attempt != n || run.Status != record.StatusDone {
		t.Fatalf("the run record: %+v, %v; want attempt %d done", run, err, n)
	}
}
