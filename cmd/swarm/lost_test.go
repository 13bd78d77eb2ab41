package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/worker"
	"golang.org/x/sys/unix"
)

// writeLostWorkers makes dir a swarm directory of n supervised process workers whose
// supervisors are gone, as a reboot leaves them: each running in state.json, with its
// supervisor's registry entry naming a pid that has exited.
func writeLostWorkers(tb testing.TB, dir string, n int) {
	tb.Helper()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		tb.Fatal(err)
	}
	pid := gone.Process.Pid
	d := statedir.Swarm{Root: dir}
	if err := os.MkdirAll(d.Logs(), 0o700); err != nil {
		tb.Fatal(err)
	}
	layout := supervise.Layout{Dir: d.Supervise()}
	started := time.Now().Add(-time.Hour)
	st := &worker.State{}
	for i := range n {
		name := fmt.Sprintf("w%d", i)
		p := int64(pid)
		st.Add(&worker.Worker{Name: name, Status: worker.StatusRunning, Cmd: []string{"claude"}, Started: worker.Timestamp(started),
			Cwd: "/tmp", Tags: []string{"lost"}, PID: &p,
			Metadata: worker.Object{}.SetValue(worker.MetaSupervised, true).SetValue(worker.MetaSupervisorPID, pid)})
		err := layout.WriteEntry(&supervise.Entry{Tool: "swarm", Name: name, Attempt: 1, PID: pid, Backend: supervise.BackendProcess,
			StartedAt: started.Format(time.RFC3339Nano)})
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(d.State(), worker.Encode(st), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// watchWrites counts the writes of the file dir/name from now on: every write of a state file
// is a rename onto it (fsx.Update), which inotify reports as it happens, so the count read
// after a command is exact.
func watchWrites(tb testing.TB, dir, name string) (count func() int) {
	tb.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		tb.Fatal(err)
	}
	n := 0
	return func() int {
		buf := make([]byte, 64<<10)
		for {
			r, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EAGAIN) {
				return n
			}
			if err != nil {
				tb.Fatal(err)
			}
			for b := buf[:r]; len(b) >= unix.SizeofInotifyEvent; {
				mask := binary.NativeEndian.Uint32(b[4:])
				size := int(binary.NativeEndian.Uint32(b[12:]))
				evName := string(bytes.TrimRight(b[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+size], "\x00"))
				if mask&unix.IN_Q_OVERFLOW != 0 {
					tb.Fatal("inotify's queue overflowed: the writes were not counted")
				}
				if evName == name {
					n++ // a rename onto it, or a write in place
				}
				b = b[unix.SizeofInotifyEvent+size:]
			}
		}
	}
}

// TestLostWorkersClosedInOneWrite (issue 27): swarm ls and swarm top --once close every worker
// whose supervisor is gone, and write state.json once for all of them: one rewrite of the whole
// file per worker made ls of 501 such workers take 38 to 52 s.
func TestLostWorkersClosedInOneWrite(t *testing.T) {
	bin, err := exec.LookPath(tool)
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	for _, verb := range [][]string{{"ls", "--format", "json"}, {"top", "--once", "--json", "--kind", "worker", "--recent", "24h"}} {
		t.Run(verb[0], func(t *testing.T) {
			home := t.TempDir()
			dir := filepath.Join(home, "sd")
			writeLostWorkers(t, dir, n)
			writes := watchWrites(t, dir, "state.json")
			cmd := exec.Command(bin, verb...)
			cmd.Env = append(os.Environ(), "SWARM_DIR="+dir, "HOME="+home, "TMUX=", "STATE_DIR="+filepath.Join(home, "state"))
			cmd.Dir = home
			start := time.Now()
			out, err := cmd.Output()
			took := time.Since(start)
			if err != nil {
				t.Fatalf("swarm %s: %v\n%s", strings.Join(verb, " "), err, out)
			}
			t.Logf("swarm %s with %d lost workers: %v", strings.Join(verb, " "), n, took.Round(time.Millisecond))
			if got := writes(); got != 1 {
				t.Errorf("swarm %s wrote state.json %d times, want once", strings.Join(verb, " "), got)
			}
			if got := strings.Count(string(out), supervise.ReasonLost); got != n {
				t.Errorf("swarm %s shows %d workers %s, want %d:\n%.2000s", strings.Join(verb, " "), got, supervise.ReasonLost, n, out)
			}
			b, err := os.ReadFile(statedir.Swarm{Root: dir}.State())
			if err != nil {
				t.Fatal(err)
			}
			st, err := worker.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range st.Workers {
				if out, ended := w.Ended(); w.Status != worker.StatusStopped || !ended || out.Reason != supervise.ReasonLost || out.ExitCode != nil {
					t.Fatalf("state.json has %s %s, %+v; want stopped, %s, no exit code", w.Name, w.Status, out, supervise.ReasonLost)
				}
			}
			layout := supervise.Layout{Dir: statedir.Swarm{Root: dir}.Supervise()}
			if left := layout.Registered(func(string) bool { return true }); len(left) != 0 {
				t.Errorf("%d registry entries left after closing their workers (%s …)", len(left), left[0])
			}
		})
	}
}
