package executor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/testenv/labconn"
	"github.com/agentfleet/fleet/internal/testenv/sshlab"
)

// labRemote is a Remote on a host of the test lab (one slot), and its connection.
func labRemote(t *testing.T, w *world) *executor.Remote {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an sshd host in a network namespace")
	}
	conns := labconn.Hosts(t, sshlab.New(t, 1), w.repo, w.agents, labVersion, 1)
	return &executor.Remote{Conn: conns[0], Repo: w.repo, StateDir: w.stateDir, Every: 200 * time.Millisecond,
		OfflineAfter: 20 * time.Second, KillGrace: time.Second, Log: os.Stderr}
}

// servers are the processes of the host's server for the state directory stateDir (the lab's
// hosts share this machine's processes).
func servers(stateDir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && strings.HasSuffix(args[0], "/dispatch") && strings.Contains(string(b), "\x00"+remote.ServeVerb+"\x00") &&
			strings.Contains(string(b), "\x00"+stateDir+"\x00") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestRemoteServer: a Remote runs its host's commands through one server of the host's
// dispatch over one ssh session (one __serve process there, whatever the attempts). The
// server is SIGKILLed while the next attempt's agent works: that attempt still ends done, its
// agent run once (its supervisor outlives the server, as it outlives an ssh session), and a
// new server is started for the reads that follow.
func TestRemoteServer(t *testing.T) {
	w := newWorld(t)
	r := labRemote(t, w)
	ctx := context.Background()
	if out := r.Run(ctx, r.Slots()[0], w.job(t, "first", "commit:first.txt")); out.Status != record.StatusDone {
		t.Fatalf("first attempt: %+v", out)
	}
	first := servers(r.Conn.Host.StateDir)
	if !r.Conn.Served() || len(first) != 1 {
		t.Fatalf("served %v, servers on the host %v: want one", r.Conn.Served(), first)
	}
	tmp := t.TempDir()
	log, gate := filepath.Join(tmp, "agents.log"), filepath.Join(tmp, "gate")
	done := make(chan executor.Outcome, 1)
	go func() {
		done <- r.Run(ctx, r.Slots()[0], w.job(t, "second", fmt.Sprintf("once:%s waitfor:%s commit:second.txt", log, gate)))
	}()
	waitFor(t, log, "second start")
	syscall.Kill(first[0], syscall.SIGKILL)
	for syscall.Kill(first[0], 0) == nil {
		time.Sleep(10 * time.Millisecond)
	}
	os.WriteFile(gate, nil, 0o600)
	var out executor.Outcome
	select {
	case out = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the attempt did not end")
	}
	if out.Status != record.StatusDone || out.Offline != nil {
		t.Fatalf("the attempt whose server was killed: %+v, want done", out)
	}
	if runs := readFile(log); strings.Count(runs, "second start") != 1 || strings.Contains(runs, "overlap") || !strings.Contains(runs, "second end 1 0") {
		t.Errorf("the agent did not run exactly once:\n%s", runs)
	}
	if got := w.git(t, "show", "refs/heads/agent/second:second.txt"); got != "second" {
		t.Errorf("agent/second's second.txt = %q", got)
	}
	if again := servers(r.Conn.Host.StateDir); !r.Conn.Served() || len(again) != 1 || again[0] == first[0] {
		t.Errorf("after the kill: served %v, servers %v (the killed one %d): want a new one", r.Conn.Served(), again, first[0])
	}
}

// TestRemoteWithoutServer: a host whose dispatch is older than the server (its __serve is an
// unknown verb, a usage error) runs its attempts the per-command way: one ssh session each.
func TestRemoteWithoutServer(t *testing.T) {
	w := newWorld(t)
	r := labRemote(t, w)
	bin := r.Conn.Host.Bin
	real := filepath.Join(bin, "dispatch.real")
	if err := os.Rename(filepath.Join(bin, "dispatch"), real); err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf(`#!/bin/sh
case " $* " in
*" %s "*) echo "dispatch: no such verb" >&2; exit 2 ;;
esac
exec %q "$@"
`, remote.ServeVerb, real)
	if err := os.WriteFile(filepath.Join(bin, "dispatch"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one", "two"} {
		if out := r.Run(context.Background(), r.Slots()[0], w.job(t, name, "commit:"+name+".txt")); out.Status != record.StatusDone {
			t.Fatalf("attempt %s: %+v", name, out)
		}
	}
	if r.Conn.Served() {
		t.Errorf("the host's dispatch has no server, and the Conn says it is served")
	}
}
