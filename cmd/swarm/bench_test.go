package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/worker"
)

// The speed targets of issue 10, as benchmarks of the binary (scripts/bench/swarm.sh times the
// same against the Python swarm): ls with 500 workers under 50 ms, spawn to a running worker
// under 200 ms, send until the agent has the text under 50 ms; and the start-up of a command.

// benchSwarm runs the swarm binary (the test binary, on PATH as swarm) in a swarm directory of
// its own, with a private tmux socket directory, and kills what it started at the end.
type benchSwarm struct {
	b       *testing.B
	bin     string
	dir     string
	environ []string
}

func newBenchSwarm(b *testing.B) *benchSwarm {
	bin, err := exec.LookPath(tool)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	sockDir, err := os.MkdirTemp("", "swb")
	if err != nil {
		b.Fatal(err)
	}
	s := &benchSwarm{b: b, bin: bin, dir: filepath.Join(dir, "sd"),
		environ: append(os.Environ(), "SWARM_DIR="+filepath.Join(dir, "sd"), "HOME="+dir, "TMUX=", "TMUX_TMPDIR="+sockDir)}
	b.Cleanup(func() {
		s.run("kill", "--all")
		layout := supervise.Layout{Dir: statedir.Swarm{Root: s.dir}.Supervise()}
		for _, name := range layout.Registered(func(string) bool { return true }) {
			if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
				syscall.Kill(e.PID, syscall.SIGKILL)
			}
		}
		os.RemoveAll(sockDir)
	})
	return s
}

func (s *benchSwarm) run(args ...string) string {
	cmd := exec.Command(s.bin, args...)
	cmd.Env = s.environ
	cmd.Dir = filepath.Dir(s.dir)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		s.b.Fatalf("swarm %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// BenchmarkStartup is a command that reads an empty swarm directory: the start-up of swarm.
func BenchmarkStartup(b *testing.B) {
	s := newBenchSwarm(b)
	for b.Loop() {
		s.run("ls")
	}
}

// BenchmarkLs500 lists 500 workers (process workers whose pids are gone, as the bench script
// has them). Target: under 50 ms.
func BenchmarkLs500(b *testing.B) {
	s := newBenchSwarm(b)
	st := &worker.State{}
	for i := range 500 {
		pid := int64(4000000 + i)
		st.Add(&worker.Worker{Name: fmt.Sprintf("w%d", i), Status: worker.StatusStopped, Cmd: []string{"sleep", "1"},
			Started: "2026-01-01T00:00:00", Cwd: "/tmp", Tags: []string{"bench"}, PID: &pid})
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "state.json"), worker.Encode(st), 0o600); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if out := s.run("ls"); strings.Count(out, "\n") != 501 {
			b.Fatalf("ls printed %d lines", strings.Count(out, "\n"))
		}
	}
}

// BenchmarkSpawn spawns a process worker (the agent is sleep) until it runs. Target: under
// 200 ms.
func BenchmarkSpawn(b *testing.B) {
	s := newBenchSwarm(b)
	i := 0
	for b.Loop() {
		i++
		s.run("spawn", "--name", fmt.Sprintf("s%d", i), "--", "sleep", "600")
	}
}

// BenchmarkSend types a line into an agent (cat) until its screen shows it and Enter is
// pressed. Target: under 50 ms.
func BenchmarkSend(b *testing.B) {
	s := newBenchSwarm(b)
	s.run("spawn", "--name", "cat", "--", "cat")
	for b.Loop() {
		s.run("send", "cat", "hello from the bench")
	}
}

// BenchmarkLsLost500 lists 500 supervised workers whose supervisors are gone (a reboot's
// leftovers), which ls closes as lost: one write of state.json for all of them (issue 27: one
// each took 38 to 52 s for 501).
func BenchmarkLsLost500(b *testing.B) {
	s := newBenchSwarm(b)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		os.RemoveAll(s.dir)
		writeLostWorkers(b, s.dir, 500)
		b.StartTimer()
		if out := s.run("ls"); strings.Count(out, "\n") != 501 {
			b.Fatalf("ls printed %d lines", strings.Count(out, "\n"))
		}
	}
}
