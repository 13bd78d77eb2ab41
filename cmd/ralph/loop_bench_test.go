package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The loop's speed targets (issue 11): between the end of one iteration and the start of the
// next under 1 s of ralph's own time (the Python swarm polled every 2 s), and `ralph status`
// under 50 ms. scripts/bench/ralph.sh runs these and times the Python swarm the same way.

// gapAgent notes when it starts and when it is about to exit, in nanoseconds, then exits at
// once after the prompt: the gap between one exit and the next start is all the loop's (the
// supervisor noticing the exit and recording it, the monitor seeing that, the next worker's
// supervisor started in tmux and the agent exec'd).
const gapAgent = `#!/bin/sh
date +%s%N >> "$1/starts"
echo "bypass permissions on"
printf '$ '
IFS= read -r line
date +%s%N >> "$1/exits"
exit 0
`

// benchEnv sets up a private swarm directory and tmux socket directory for a benchmark.
func benchEnv(b *testing.B) (work, swarmDir string) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("tmux not installed")
	}
	work = b.TempDir()
	sockDir, err := os.MkdirTemp("", "rlb")
	if err != nil {
		b.Fatal(err)
	}
	swarmDir = filepath.Join(work, "sd")
	b.Cleanup(func() { cleanupSwarm(swarmDir, sockDir) })
	b.Setenv("TMUX_TMPDIR", sockDir)
	b.Setenv("TMUX", "")
	b.Setenv("SWARM_DIR", swarmDir)
	b.Setenv("STATE_DIR", "")
	os.WriteFile(filepath.Join(work, "agent.sh"), []byte(gapAgent), 0o755)
	os.WriteFile(filepath.Join(work, "PROMPT.md"), []byte("next\n"), 0o644)
	return work, swarmDir
}

func readStamps(path string) []int64 {
	b, _ := os.ReadFile(path)
	var out []int64
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.ParseInt(f, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// BenchmarkIterationGap runs a loop of b.N+1 iterations of an agent that exits at once and
// reports the time from each agent's exit to the next one's start: ms/gap (the mean), and
// p50-ms and max-ms.
func BenchmarkIterationGap(b *testing.B) {
	work, swarmDir := benchEnv(b)
	ralph, err := exec.LookPath("ralph")
	if err != nil {
		b.Fatal(err)
	}
	n := b.N + 1
	b.ResetTimer()
	out, err := exec.Command(ralph, "spawn", "--name", "gap", "--prompt-file", filepath.Join(work, "PROMPT.md"), "--no-worktree",
		"--no-progress", "0", // the agent changes nothing: the breaker would end the loop after 3
		"--max-iterations", strconv.Itoa(n), "--", "sh", filepath.Join(work, "agent.sh"), work).CombinedOutput()
	if err != nil {
		b.Fatalf("spawn: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*5*time.Second+30*time.Second)
	defer cancel()
	for len(readStamps(filepath.Join(work, "exits"))) < n {
		if ctx.Err() != nil {
			log, _ := os.ReadFile(filepath.Join(swarmDir, "ralph", "gap", "iterations.log"))
			b.Fatalf("%d of %d iterations in time:\n%s", len(readStamps(filepath.Join(work, "exits"))), n, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	starts, exits := readStamps(filepath.Join(work, "starts")), readStamps(filepath.Join(work, "exits"))
	var gaps []float64
	for i := 0; i+1 < len(starts) && i < len(exits); i++ {
		gaps = append(gaps, float64(starts[i+1]-exits[i])/1e6)
	}
	if len(gaps) == 0 {
		b.Fatal("no gaps measured")
	}
	sort.Float64s(gaps)
	sum := 0.0
	for _, g := range gaps {
		sum += g
	}
	b.ReportMetric(sum/float64(len(gaps)), "ms/gap")
	b.ReportMetric(gaps[len(gaps)/2], "p50-ms")
	b.ReportMetric(gaps[len(gaps)-1], "max-ms")
	exec.Command(ralph, "stop", "gap").Run()
}

// BenchmarkStatus times `ralph status NAME` (the binary, as a person runs it) on a loop whose
// worker runs.
func BenchmarkStatus(b *testing.B) {
	work, _ := benchEnv(b)
	ralph, err := exec.LookPath("ralph")
	if err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "plan"), []byte("idle\n"), 0o644)
	agent, _ := filepath.Abs("testdata/loop-agent.sh")
	out, err := exec.Command(ralph, "spawn", "--name", "st", "--prompt-file", filepath.Join(work, "PROMPT.md"), "--no-worktree",
		"--", "sh", agent, filepath.Join(work, "plan"), filepath.Join(work, "count")).CombinedOutput()
	if err != nil {
		b.Fatalf("spawn: %v\n%s", err, out)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err := exec.Command(ralph, "status", "st").CombinedOutput(); err != nil || !strings.Contains(string(out), "Status: running") {
			b.Fatalf("status: %v\n%s", err, out)
		}
	}
	b.StopTimer()
	exec.Command(ralph, "stop", "st").Run()
}
