package top_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkIdle500 is swarm top's UI showing 500 agents (fleet500's), left alone: the CPU it
// uses over 30 s (utime and stime of /proc/PID/stat), as a percentage of one core, reported as
// the metric %cpu. Target: under 1. It runs `swarm top` in an 80x24 pane of a private tmux
// server; run it once (-benchtime 1x).
func BenchmarkIdle500(b *testing.B) {
	if swarmBin == "" {
		b.Skip("needs the swarm binary")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("needs tmux")
	}
	src := fleet500(b)
	dir, err := os.MkdirTemp("", "topidle") // tmux socket paths must be short
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	tmux := func(args ...string) string {
		c := exec.Command("tmux", append([]string{"-S", filepath.Join(dir, "s")}, args...)...)
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "TMUX=") {
				env = append(env, kv)
			}
		}
		c.Env = append(env, "SWARM_DIR="+src.SwarmDir, "TMUX_TMPDIR="+dir, "TERM=xterm-256color")
		out, err := c.CombinedOutput()
		if err != nil && args[0] != "kill-server" {
			b.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-s", "idle", "-x", "80", "-y", "24", "-c", src.Workspace,
		"exec "+swarmBin+" top --state-dir "+src.StateDir+" --workspace "+src.Workspace)
	defer tmux("kill-server")
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(tmux("capture-pane", "-p", "-t", "idle"), "500 agents") {
		if time.Now().After(deadline) {
			b.Fatalf("swarm top does not show 500 agents within 60s:\n%s", tmux("capture-pane", "-p", "-t", "idle"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid := strings.TrimSpace(tmux("display", "-p", "-t", "idle", "#{pane_pid}"))
	const window = 30 * time.Second
	b.ResetTimer()
	t0, c0 := time.Now(), cpuTicks(b, pid)
	time.Sleep(window) // the measurement's window, not a wait for a signal
	t1, c1 := time.Now(), cpuTicks(b, pid)
	b.StopTimer()
	// Clock ticks are 1/100 s on Linux (USER_HZ).
	pct := float64(c1-c0) / 100 / t1.Sub(t0).Seconds() * 100
	b.ReportMetric(pct, "%cpu")
	b.ReportMetric(0, "ns/op")
}

// cpuTicks is utime+stime of pid, in clock ticks.
func cpuTicks(b *testing.B, pid string) int64 {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// After the command: state is field 3, utime 14 and stime 15 (1-based, of the whole line).
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st
}
