package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv/postmortem"
	"github.com/agentfleet/fleet/internal/worker"
)

// TestConcurrentSpawn starts 100 (30 under -race; SWARM_TEST_SPAWNS) `swarm spawn` at once
// (process mode, an agent that sleeps): all are listed, state.json is valid JSON in the Python
// tool's format with as many distinct names, and kill --all leaves no worker, supervisor or
// agent behind.
func TestConcurrentSpawn(t *testing.T) {
	if testing.Short() {
		t.Skip("100 supervisors: skipped under -short")
	}
	t.Parallel() // its own swarm directory and environment (cmd.Env)
	n := 100
	if raceEnabled {
		n = 30
	}
	if v, _ := strconv.Atoi(os.Getenv("SWARM_TEST_SPAWNS")); v > 0 {
		n = v
	}
	bin, err := exec.LookPath(tool) // testscript.Main put the test binary on PATH as swarm
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	swarmDir := filepath.Join(dir, "sd")
	environ := append(os.Environ(), "SWARM_DIR="+swarmDir, "HOME="+dir, "TMUX=", "TMUX_TMPDIR="+dir)
	layout := supervise.Layout{Dir: statedir.Swarm{Root: swarmDir}.Supervise()}
	t.Cleanup(func() {
		postmortem.OnFailure(t, dir)
		// What kill --all did not stop: the supervisors, then their agents (each in a session
		// of its own, so the supervisor's process group is not the agent's).
		for _, name := range layout.Registered(func(string) bool { return true }) {
			if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
				syscall.Kill(e.PID, syscall.SIGKILL)
			}
		}
		if s, err := (&worker.Registry{Dir: statedir.Swarm{Root: swarmDir}}).Load(); err == nil {
			for _, w := range s.Workers {
				var pid int
				if w.Meta("agent_pid", &pid) && pid > 0 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
	// Every command is bounded, so a deadlock fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	swarm := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		// Bounds the wait for the output's end after the command exited (a supervisor spawn
		// left behind holding the pipes would fail the test, not hang it). Not 1 s: with 100
		// commands at once on a loaded machine, the copying goroutines were once not scheduled
		// within it (WaitDelay expired before I/O complete, with nothing holding the pipes).
		cmd.WaitDelay = 10 * time.Second
		cmd.Env = environ
		cmd.Dir = dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("swarm %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		return out.String(), err
	}

	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("w%03d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := swarm("spawn", "--name", want[i], "--", "sleep", "600"); err != nil {
				errs <- err
			}
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d spawns in %s", n, time.Since(t0).Round(time.Millisecond))

	t1 := time.Now()
	out, err := swarm("ls", "--format", "names", "--status", "running")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ls in %s", time.Since(t1).Round(time.Millisecond))
	got := strings.Fields(out)
	sort.Strings(got)
	if !equalStrings(got, want) {
		t.Errorf("ls --format names --status running = %d names %q, want %d", len(got), got, n)
	}

	b, err := os.ReadFile(filepath.Join(swarmDir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Workers []struct {
			Name string `json:"name"`
		} `json:"workers"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("state.json is not JSON: %v", err)
	}
	var names []string
	for _, w := range raw.Workers {
		names = append(names, w.Name)
	}
	sort.Strings(names)
	if !equalStrings(names, want) {
		t.Errorf("state.json has %d workers %q, want %d distinct", len(names), names, n)
	}
	s, err := worker.Decode(b)
	if err != nil {
		t.Fatalf("worker.Decode(state.json): %v", err)
	}
	if enc := worker.Encode(s); !bytes.Equal(enc, b) {
		t.Errorf("state.json is not as the Python tool writes it:\n%s", b)
	}

	t1 = time.Now()
	if _, err := swarm("kill", "--all"); err != nil {
		t.Fatal(err)
	}
	t.Logf("kill --all in %s", time.Since(t1).Round(time.Millisecond))
	if out, err := swarm("ls", "--format", "names", "--status", "running"); err != nil || out != "" {
		t.Errorf("after kill --all, ls --status running = %q, %v", out, err)
	}
	// Every supervisor is gone (each waits for its agent before it goes).
	deadline := time.Now().Add(10 * time.Second)
	for {
		var alive []string
		for _, name := range layout.Registered(func(string) bool { return true }) {
			if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
				alive = append(alive, name)
			}
		}
		if len(alive) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("supervisors still alive after kill --all: %q", alive)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
