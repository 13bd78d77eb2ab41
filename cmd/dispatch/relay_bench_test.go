package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/tmux"
)

// BenchmarkRelay has the stand-in agent print BENCH_RELAY_MB MiB (default 1024) as fast as it
// can (agent.sh's SPEW) through the supervisor's relay, which copies it to the console, the
// log, the 64 KB tail and, since the supervisor runs agents on a terminal, the screen model.
// Target: the supervisor stays under 20 MB of memory and the log is complete. Each op is one
// dispatch, once without tmux (the console is /dev/null) and once in a tmux pane, which reads
// at its own pace. Per op it reports:
//
//	peak-rss-MB   the supervisor's peak resident memory (VmHWM of /proc/PID/status, polled)
//	anon-MB       the most of it that was its own (RssAnon: heap, stacks, buffers; the rest is
//	              the binary's pages, shared by every supervisor)
//	MiB/s         the agent's first byte in the log to its last
//	sup-cpu-s     the supervisor's CPU time (user+system) over its life
//	tmux-cpu-s    the tmux server's CPU time over the op (tmux only)
//
// It fails only when the log is not exactly the agent's output: every byte checked, in order.
// Run it alone (`-bench Relay -benchtime 1x`): each op moves the whole volume.
func BenchmarkRelay(b *testing.B) {
	mb := 1024
	if v := os.Getenv("BENCH_RELAY_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("BENCH_RELAY_MB=%q: want a whole number of MiB, at least 1", v)
		}
		mb = n
	}
	for _, mode := range []struct {
		name string
		args []string
	}{{"no-tmux", []string{"--no-tmux"}}, {"tmux", nil}} {
		b.Run(mode.name, func(b *testing.B) {
			f := newFleet(b, "", "")
			var peak, anon, rate, cpu, tmuxCPU float64
			for i := 0; i < b.N; i++ {
				r := f.relay(fmt.Sprintf("relay-%d", i), mb, mode.args)
				peak, anon = max(peak, r.peakMB), max(anon, r.anonMB)
				rate += r.mibPerSec / float64(b.N)
				cpu += r.cpuSec / float64(b.N)
				tmuxCPU += r.tmuxCPUSec / float64(b.N)
			}
			b.ReportMetric(peak, "peak-rss-MB")
			b.ReportMetric(anon, "anon-MB")
			b.ReportMetric(rate, "MiB/s")
			b.ReportMetric(cpu, "sup-cpu-s")
			if mode.args == nil {
				b.ReportMetric(tmuxCPU, "tmux-cpu-s")
			}
			b.ReportMetric(float64(mb), "MiB")
		})
	}
}

// relayFigures are one relay's measurements.
type relayFigures struct {
	peakMB, anonMB, mibPerSec, cpuSec, tmuxCPUSec float64
}

// relay dispatches an agent that prints mb MiB, watches its supervisor until the outcome is
// recorded, and checks the log.
func (f *fleet) relay(bead string, mb int, extraArgs []string) relayFigures {
	b := f.tb.(*testing.B)
	want := int64(mb) << 20
	tmuxPID, tmuxStart := 0, int64(0)
	if extraArgs == nil {
		tmuxPID, tmuxStart = f.tmuxServer()
	}
	code, stdout, stderr := f.dispatch(nil, append([]string{bead, f.repo, "fake", fmt.Sprintf("SPEW=%d", mb)}, extraArgs...)...)
	if code != 0 {
		b.Fatalf("dispatch: exit %d\n%s%s", code, stdout, stderr)
	}
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for pid == 0 {
		if e, _ := f.entry(bead); e != nil && e.PID > 0 {
			pid = e.PID
		} else if time.Now().After(deadline) {
			b.Fatalf("%s: no supervisor pid in its entry after 30 s", bead)
		}
		time.Sleep(time.Millisecond)
	}
	// Should the benchmark stop half-way, nothing of it outlives it: fleet.stopAll knows only
	// the entries of this version of dispatch.
	b.Cleanup(func() {
		if e, _ := f.entry(bead); e != nil {
			syscall.Kill(e.PID, syscall.SIGKILL)
			if e.AgentPID > 0 {
				syscall.Kill(-e.AgentPID, syscall.SIGKILL)
			}
		}
	})

	// Poll every 10 ms: often enough to time the relay within a percent of a second-long run,
	// seldom enough to cost the two of them (agent and supervisor) nothing measurable.
	logPath := f.layout().LogPath(bead)
	var peakKB, anonKB, ticks int64
	var first, full time.Time
	var res *record.Result
	for {
		now := time.Now()
		if hwm, anon, ok := memKB(pid); ok {
			peakKB, anonKB = max(peakKB, hwm), max(anonKB, anon)
			if t, err := cpuTicks(pid); err == nil {
				ticks = t
			}
		}
		if st, err := os.Stat(logPath); err == nil {
			if first.IsZero() && st.Size() > 0 {
				first = now
			}
			if full.IsZero() && st.Size() >= want {
				full = now
			}
		}
		if r, err := record.ReadResult(f.store().ResultPath(bead)); err == nil && r.Status != record.StatusRunning {
			res = r
			break
		}
		if !supervisorProcess(pid) {
			// Gone between two looks: its final record is on disk, or it never will be.
			res = f.waitFinal(bead, 5*time.Second)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if full.IsZero() {
		full = time.Now()
	}
	fig := relayFigures{peakMB: float64(peakKB) * 1024 / 1e6, anonMB: float64(anonKB) * 1024 / 1e6, cpuSec: float64(ticks) / 100}
	if d := full.Sub(first).Seconds(); d > 0 && !first.IsZero() {
		fig.mibPerSec = float64(mb) / d
	}
	if tmuxPID > 0 {
		if t, err := cpuTicks(tmuxPID); err == nil {
			fig.tmuxCPUSec = float64(t-tmuxStart) / 100
		}
	}
	// The supervisor removes its entry and exits right after the final record.
	for deadline := time.Now().Add(30 * time.Second); supervisorProcess(pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}

	b.StopTimer()
	if res.Status != record.StatusDone {
		b.Errorf("%s: %s (%s), want done", bead, res.Status, res.Reason)
	}
	if err := checkSpew(logPath, mb); err != nil {
		b.Errorf("%s: the log is not the agent's output: %v", bead, err)
	}
	os.Remove(logPath) // a GiB a run
	b.Logf("%s: peak RSS %.1f MB (%.1f MB its own), %.1f MiB/s, supervisor CPU %.2f s, tmux CPU %.2f s",
		bead, fig.peakMB, fig.anonMB, fig.mibPerSec, fig.cpuSec, fig.tmuxCPUSec)
	b.StartTimer()
	return fig
}

// tmuxServer is the pid of the fleet's tmux server and its CPU ticks so far, or 0. It starts
// the server with a session of its own, which keeps it up between dispatches.
func (f *fleet) tmuxServer() (int, int64) {
	f.tb.Helper()
	c := &tmux.Client{Socket: f.socket}
	ctx := context.Background()
	if _, err := c.NewSession(ctx, "relay-bench-keepalive", os.TempDir(), nil, "sleep", "3600"); err != nil {
		f.tb.Logf("no tmux server to measure: %v", err)
		return 0, 0
	}
	out, err := exec.Command("tmux", "-S", f.socket, "display-message", "-p", "-t", "=relay-bench-keepalive:", "#{pid}").Output()
	if err != nil {
		f.tb.Logf("no tmux server pid: %v", err)
		return 0, 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, 0
	}
	t, err := cpuTicks(pid)
	if err != nil {
		return 0, 0
	}
	return pid, t
}

// memKB is pid's peak resident memory (VmHWM) and its private part now (RssAnon), in kB,
// from /proc/PID/status.
func memKB(pid int) (hwm, anon int64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, false
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		name, v, _ := strings.Cut(line, ":")
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch {
		case err != nil:
		case name == "VmHWM":
			hwm, n = kb, n+1
		case name == "RssAnon":
			anon, n = kb, n+1
		}
	}
	return hwm, anon, n == 2
}

// spewBlock is block n of what agent.sh prints for SPEW: a numbered line, then 64-byte lines
// of x's to 1 MiB.
func spewBlock(buf []byte, n int) []byte {
	buf = buf[:0]
	buf = fmt.Appendf(buf, "spew %09d %s\n", n, strings.Repeat(".", 48))
	line := strings.Repeat("x", 63) + "\n"
	for len(buf) < 1<<20 {
		buf = append(buf, line...)
	}
	return buf
}

// checkSpew checks that the log at path holds the agent's SPEW output of mb MiB whole: its
// first line, every block byte for byte and in order, and the agent's last line right after.
func checkSpew(path string, mb int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	head, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("no first line: %v", err)
	}
	if !strings.HasPrefix(head, "agent: pid ") {
		return fmt.Errorf("first line %q, want the agent's", head)
	}
	got := make([]byte, 1<<20)
	var want []byte
	for n := 0; n < mb; n++ {
		k, err := io.ReadFull(r, got)
		want = spewBlock(want, n)
		if err != nil || !bytes.Equal(got, want) {
			i := 0
			for i < k && got[i] == want[i] {
				i++
			}
			return fmt.Errorf("block %d of %d differs at its byte %d (log offset %d), or ends there: %v",
				n, mb, i, int64(len(head))+int64(n)<<20+int64(i), err)
		}
	}
	rest, _ := io.ReadAll(io.LimitReader(r, 4096))
	if !bytes.Contains(rest, []byte("agent: finished")) || bytes.HasPrefix(rest, []byte("spew")) {
		return fmt.Errorf("after %d MiB: %q, want the agent's last line", mb, rest)
	}
	return nil
}
