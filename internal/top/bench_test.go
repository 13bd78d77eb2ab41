package top_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/top"
	"github.com/agentfleet/fleet/internal/worker"
)

// fleet500 writes 500 agents' state (no live processes): 150 swarm workers that ended, 250
// dispatched beads, 40 AIWG loops and 60 queue tasks, all within the last hour.
func fleet500(b testing.TB) top.Sources {
	root := b.TempDir()
	swarmDir, ws := filepath.Join(root, "swarm"), filepath.Join(root, "ws")
	stateDir := filepath.Join(ws, "state")
	for _, d := range []string{filepath.Join(swarmDir, "logs"), ws} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now()
	st := &worker.State{}
	for i := range 150 {
		w := &worker.Worker{Name: fmt.Sprintf("w%d", i), Status: worker.StatusStopped, Cmd: []string{"claude"},
			Started: worker.Timestamp(now.Add(-time.Minute)), Cwd: root, Tags: []string{"t"}}
		code := int64(i % 3)
		w.Metadata = worker.Object{}.SetValue(worker.MetaSupervised, true).SetValue(worker.MetaExitCode, code).
			SetValue(worker.MetaFinished, worker.Timestamp(now)).SetValue(worker.MetaReason, fmt.Sprintf("agent-exit-%d", code))
		st.Workers = append(st.Workers, w)
	}
	if err := os.WriteFile(filepath.Join(swarmDir, "state.json"), append(append([]byte(`{"workers": `), worker.EncodeWorkers(st.Workers)...), '}'), 0o600); err != nil {
		b.Fatal(err)
	}
	writeBeads(b, stateDir, 250, now)
	for i := range 40 {
		writeAIWG(b, ws, fmt.Sprintf("ralph-task-%08x", i), stateDir)
	}
	writeQueue(b, ws, "plan", 60)
	return top.Sources{SwarmDir: swarmDir, StateDir: stateDir, Workspace: ws}
}

func count(b *testing.B, rows []*top.Row) {
	if len(rows) != 500 {
		b.Fatalf("%d rows, want 500", len(rows))
	}
}

// BenchmarkOnce500 is swarm top --once's work with 500 agents: open the sources, read every row.
// Target: under 100 ms.
func BenchmarkOnce500(b *testing.B) { benchOnce(b, fleet500(b), count) }

// benchOnce times --once's work over src: open the sources, read every row, check them.
func benchOnce(b *testing.B, src top.Sources, check func(*testing.B, []*top.Row)) {
	for b.Loop() {
		m, err := top.Open(src)
		if err != nil {
			b.Fatal(err)
		}
		rows, err := m.Refresh(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		check(b, rows)
	}
}

// benchRefresh times one refresh by read (Refresh, or the UI's Snapshot) of a model kept from
// the last, over src.
func benchRefresh(b *testing.B, src top.Sources, read func(*top.Model, context.Context) ([]*top.Row, error), check func(*testing.B, []*top.Row)) {
	m, err := top.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	read(m, context.Background())
	for b.Loop() {
		rows, err := read(m, context.Background())
		if err != nil {
			b.Fatal(err)
		}
		check(b, rows)
	}
}

// BenchmarkRefresh500 is one refresh of the UI with 500 agents (the model kept from the last).
// Target: under 50 ms.
func BenchmarkRefresh500(b *testing.B) { benchRefresh(b, fleet500(b), (*top.Model).Refresh, count) }

// hang50 makes 50 of fleet500's beads live under a supervisor that never answers its control
// socket: a process whose command line is a supervisor's (so top takes it for one) and a
// stand-in listener that accepts and says nothing.
func hang50(b *testing.B, src top.Sources) {
	sock, err := os.MkdirTemp("", "tophung") // socket paths must be short
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(sock) })
	l := supervise.Layout{Dir: src.StateDir}
	for i := range 50 {
		bead := fmt.Sprintf("bead-%d", i)
		// Its own process group, killed whole: the shell and its sleep.
		c := exec.Command("sh", "-c", "sleep 3600; :", supervise.SuperviseVerb, bead)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { syscall.Kill(-c.Process.Pid, syscall.SIGKILL); c.Wait() })
		path := filepath.Join(sock, fmt.Sprint(i))
		testenv.HungSocket(b, path)
		if err := l.WriteEntry(&supervise.Entry{Tool: "dispatch", Name: bead, Attempt: 1, PID: c.Process.Pid,
			Backend: supervise.BackendProcess, Control: path, StartedAt: time.Now().UTC().Format(time.RFC3339)}); err != nil {
			b.Fatal(err)
		}
	}
}

func live50(b *testing.B, rows []*top.Row) {
	count(b, rows)
	n := 0
	for _, r := range rows {
		if r.Live {
			n++
		}
	}
	if n != 50 {
		b.Fatalf("%d live rows, want 50", n)
	}
}

// BenchmarkRefresh500Hung50 is one refresh of the UI (Snapshot) with 500 agents, 50 of them
// under supervisors that never answer. Target: under 50 ms, as with none hung.
func BenchmarkRefresh500Hung50(b *testing.B) {
	src := fleet500(b)
	hang50(b, src)
	benchRefresh(b, src, (*top.Model).Snapshot, live50)
}

// BenchmarkOnce500Hung50 is swarm top --once with 500 agents, 50 of them under supervisors that
// never answer: it waits for their screens the model's Timeout (300 ms), once.
func BenchmarkOnce500Hung50(b *testing.B) {
	src := fleet500(b)
	hang50(b, src)
	benchOnce(b, src, live50)
}
