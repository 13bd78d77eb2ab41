package aiwg

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// childGone waits until the process whose pid is in the file at path is gone (a zombie counts
// as gone: its group was killed and it waits for its parent, pid 1, to reap it).
func (l *lab) childGone(path string) {
	l.t.Helper()
	l.waitFile(path)
	b, _ := os.ReadFile(path)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		l.t.Fatalf("%s: %q is not a pid", path, b)
	}
	l.waitUntil("the check's background child "+strconv.Itoa(pid)+" gone", func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		f := strings.Fields(string(stat))
		return len(f) > 2 && f[2] == "Z"
	})
}

// TestCheckLeavesAChild: a completion command that leaves a background child holding its
// output (a test run that starts a server) does not hang the loop (it waited for the pipe, up
// to 30 minutes): the check ends when the command exits, and the child goes with its group
// (issue 17).
func TestCheckLeavesAChild(t *testing.T) {
	l := newLab(t, "touch=done.txt")
	id := l.start("Serve", "sleep 300 & echo $! > "+l.marker("child.pid")+"; test -f done.txt")
	start := time.Now()
	st := l.waitStatus(id, StatusCompleted)
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the loop took %s to complete", d)
	}
	if c := st.Progress.LastCompletionCheck; c == nil || !c.Passed || c.DurationSeconds > 10 {
		t.Errorf("last check %+v, want passed in a few seconds", c)
	}
	l.childGone(l.marker("child.pid"))
}

// TestAbortStopsTheCheck: ralph abort while the completion command runs stops it and what it
// started (the child survived abort; issue 17).
func TestAbortStopsTheCheck(t *testing.T) {
	l := newLab(t, "exit=0")
	id := l.start("Slow check", "sleep 300 & echo $! > "+l.marker("child.pid")+"; sleep 300")
	l.waitFile(l.marker("child.pid"))
	before := l.state(id)
	start := time.Now()
	if _, err := l.ws.Abort(context.Background(), id); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("abort took %s", d)
	}
	l.settled(id, StatusAborted, *before.PID, before.PIDStart)
	l.childGone(l.marker("child.pid"))
}
