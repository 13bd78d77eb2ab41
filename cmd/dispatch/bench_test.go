package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/supervise"
)

// The dispatch benchmarks measure what the issue sets targets for, on the real binary
// ($DISPATCH_BIN, else this test binary as dispatch), real tmux and the stand-in agents:
//
//	BenchmarkDispatchLatency  dispatch's exec to its exit, the agent running (target < 200 ms median)
//	BenchmarkOutcomeLatency   the agent's exit to its result record on disk (target < 1 s; dispatch.sh polled every 20 s)
//	BenchmarkIdleCPU          a supervisor's CPU while its agent runs (target ~0)
//	BenchmarkRelay            a supervisor's peak memory while its agent prints 1 GiB (target
//	                          < 20 MB), and the log complete (relay_bench_test.go)
//
// They report figures and never fail on slowness; scripts/bench/dispatch.sh puts them in a table.
// They time older binaries too (DISPATCH_BIN=the build of another commit), for a before and
// after: nothing here depends on how a version hands the supervisor its spec.

// median and p90 of ds, in ms.
func percentiles(ds []time.Duration) (median, p90 float64) {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	if len(s) == 0 {
		return 0, 0
	}
	median = ms(s[len(s)/2])
	if len(s)%2 == 0 {
		median = (ms(s[len(s)/2-1]) + ms(s[len(s)/2])) / 2
	}
	return median, ms(s[(len(s)*9+9)/10-1])
}

// stopBead stops bead's supervisor (SIGTERM) and waits for its final records.
func (f *fleet) stopBead(bead string) {
	f.tb.Helper()
	e, err := f.entry(bead)
	if err != nil || e == nil {
		f.tb.Fatalf("%s: no supervisor entry: %v", bead, err)
	}
	syscall.Kill(e.PID, syscall.SIGTERM)
	f.waitFinal(bead, 60*time.Second)
}

// benchEntry is what the benchmarks read of a supervisor's registry entry.
type benchEntry struct {
	PID      int `json:"pid"`
	AgentPID int `json:"agent_pid"`
}

// entry reads bead's registry entry, or nil when there is none. The benchmarks time older
// binaries too (DISPATCH_BIN), whose entries name the bead under "bead", not "name", which
// Layout.ReadEntry refuses; the pids are where they always were.
func (f *fleet) entry(bead string) (*benchEntry, error) {
	b, err := os.ReadFile(f.layout().EntryPath(bead))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var e benchEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("supervisor entry %s: %w", f.layout().EntryPath(bead), err)
	}
	return &e, nil
}

// BenchmarkDispatchLatency times `dispatch BEAD REPO fake HANG` from its exec to its exit: the
// supervisor is started in its tmux session and the records say running. The agent starts in
// the supervisor, after dispatch has returned; its start is reported apart (agent-up-ms).
func BenchmarkDispatchLatency(b *testing.B) {
	f := newFleet(b, "", "")
	var took, up []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bead := fmt.Sprintf("lat-%d", i)
		start := time.Now()
		code, stdout, stderr := f.dispatch(nil, bead, f.repo, "fake", "HANG")
		took = append(took, time.Since(start))
		b.StopTimer()
		if code != 0 {
			b.Fatalf("dispatch: exit %d\n%s%s", code, stdout, stderr)
		}
		f.waitAgent(bead, 30*time.Second)
		up = append(up, time.Since(start))
		f.stopBead(bead)
		b.StartTimer()
	}
	med, p90 := percentiles(took)
	b.ReportMetric(med, "median-ms")
	b.ReportMetric(p90, "p90-ms")
	upMed, _ := percentiles(up)
	b.ReportMetric(upMed, "agent-up-ms")
}

// BenchmarkOutcomeLatency times the agent's exit to its outcome on disk. The stand-in
// testdata/stamp-agent.sh sleeps 1 s (so the supervisor is idle, waiting, as it mostly is),
// writes the time to a file, and exits 0. The outcome is on disk when the final result record
// is renamed into place: the benchmark watches the record's inode every 0.5 ms, so the figure
// is an upper bound, by at most that interval. (File timestamps would not do: the kernel sets
// them from a clock that lags date's by up to a tick of 4 ms.)
func BenchmarkOutcomeLatency(b *testing.B) {
	f := newFleet(b, "", "")
	stamps := b.TempDir()
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		bead := fmt.Sprintf("out-%d", i)
		stamp := filepath.Join(stamps, bead)
		code, stdout, stderr := f.dispatch(nil, bead, f.repo, "stamp", "SLEEP=1 STAMP="+stamp)
		if code != 0 {
			b.Fatalf("dispatch: exit %d\n%s%s", code, stdout, stderr)
		}
		recorded := f.waitReplaced(f.store().ResultPath(bead), 60*time.Second)
		res := f.waitFinal(bead, time.Second)
		if res.Status != "done" {
			b.Fatalf("%s: %s (%s), want done", bead, res.Status, res.Reason)
		}
		raw, err := os.ReadFile(stamp)
		if err != nil {
			b.Fatalf("the agent's stamp: %v", err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil {
			b.Fatalf("the agent's stamp %q: %v", raw, err)
		}
		lat = append(lat, recorded.Sub(time.Unix(0, ns)))
	}
	med, p90 := percentiles(lat)
	b.ReportMetric(med, "median-ms")
	b.ReportMetric(p90, "p90-ms")
	b.ReportMetric(0, "ns/op") // the agent's sleep, not a figure of dispatch
}

// waitReplaced returns when path, as it is now, is replaced by another file (a new inode: an
// atomic write renamed over it).
func (f *fleet) waitReplaced(path string, limit time.Duration) time.Time {
	f.tb.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		f.tb.Fatal(err)
	}
	ino := st.Ino
	deadline := time.Now().Add(limit)
	for {
		now := time.Now()
		if err := syscall.Stat(path, &st); err == nil && st.Ino != ino {
			return now
		}
		if now.After(deadline) {
			f.tb.Fatalf("%s was not replaced within %s", path, limit)
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// idle is the one measurement of BenchmarkIdleCPU, shared by the calls the framework makes.
var idle struct {
	once         sync.Once
	ticksPerSec  float64
	window       time.Duration
	threads      int
	measureError error
}

// BenchmarkIdleCPU samples the CPU time (utime+stime in /proc/PID/stat, in clock ticks of
// 10 ms) a supervisor uses over 5 s while its agent runs and prints nothing.
func BenchmarkIdleCPU(b *testing.B) {
	idle.once.Do(func() {
		f := newFleet(b, "", "")
		code, stdout, stderr := f.dispatch(nil, "idle", f.repo, "fake", "HANG")
		if code != 0 {
			idle.measureError = fmt.Errorf("dispatch: exit %d\n%s%s", code, stdout, stderr)
			return
		}
		f.waitAgent("idle", 30*time.Second)
		e, err := f.entry("idle")
		if err != nil || e == nil {
			idle.measureError = fmt.Errorf("no supervisor entry: %v", err)
			return
		}
		time.Sleep(500 * time.Millisecond) // past its start
		before, err := cpuTicks(e.PID)
		if err != nil {
			idle.measureError = err
			return
		}
		t0 := time.Now()
		time.Sleep(5 * time.Second)
		after, err := cpuTicks(e.PID)
		if err != nil {
			idle.measureError = err
			return
		}
		idle.window = time.Since(t0)
		idle.ticksPerSec = float64(after-before) / idle.window.Seconds()
		idle.threads = threads(e.PID)
		if !supervise.SupervisorAlive(e.PID, "idle") {
			idle.measureError = fmt.Errorf("the supervisor died during the measurement")
		}
		f.stopBead("idle")
	})
	if idle.measureError != nil {
		b.Fatal(idle.measureError)
	}
	b.ReportMetric(idle.ticksPerSec, "ticks/s")
	b.ReportMetric(idle.ticksPerSec, "cpu-%") // a tick is 10 ms: ticks per second are hundredths of a CPU
	b.ReportMetric(float64(idle.threads), "threads")
	b.ReportMetric(0, "ns/op")
}

// cpuTicks is utime+stime of pid, from /proc/PID/stat.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count fields after its closing parenthesis.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	fields := strings.Fields(rest) // fields[0] is field 3 (state); utime is field 14, stime 15
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return utime + stime, nil
}

func threads(pid int) int {
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return len(entries)
}
