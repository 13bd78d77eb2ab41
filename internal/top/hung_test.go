package top_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/top"
)

// rowOf is the row of kind and name in rows, nil when there is none.
func rowOf(rows []*top.Row, kind top.Kind, name string) *top.Row {
	for _, r := range rows {
		if r.Kind == kind && r.Name == name {
			return r
		}
	}
	return nil
}

// A supervisor that never answers its control socket holds no other row: the UI's refresh
// (Snapshot) shows another agent's change within the refresh interval (1 s), and the hung
// agent's row keeps its file-based fields and says its screen is not answering. swarm top
// --once (Refresh) waits for it at most the model's Timeout.
func TestHungSupervisorHoldsNoOtherRow(t *testing.T) {
	l := newLab(t)
	l.swarm("spawn", "--name", "hung", "--tag", "stuck", "--", "sh", "-c", "echo hung-ready; exec cat")
	l.swarm("spawn", "--name", "other", "--", "sh", "-c", "echo other-ready; exec cat")
	m := l.model()
	waitRow(t, m, top.KindWorker, "hung", func(r *top.Row) bool { return r.Live && r.LastLine == "hung-ready" })
	waitRow(t, m, top.KindWorker, "other", func(r *top.Row) bool { return r.Live && r.LastLine == "other-ready" })

	e, err := supervise.Layout{Dir: filepath.Join(l.swarmDir, "supervise")}.ReadEntry("hung")
	if err != nil || e == nil || e.Control == "" {
		t.Fatalf("hung's supervisor entry: %+v, %v", e, err)
	}
	testenv.HungSocket(t, e.Control)

	const interval = time.Second
	ctx := context.Background()
	snapshot := func() []*top.Row {
		t.Helper()
		start := time.Now()
		rows, err := m.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > interval/2 {
			t.Errorf("a refresh took %v with a hung supervisor", d.Round(time.Millisecond))
		}
		return rows
	}
	// The hung one says so once a read has been in flight longer than the Timeout (300 ms),
	// and keeps what it showed last.
	deadline := time.Now().Add(5 * time.Second)
	var hung *top.Row
	for time.Now().Before(deadline) {
		if hung = rowOf(snapshot(), top.KindWorker, "hung"); hung != nil && hung.ScreenError != "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if hung == nil || hung.ScreenError != "not answering" {
		t.Fatalf("the hung supervisor's row: %+v, want screen_error \"not answering\"", hung)
	}
	if !hung.Live || hung.Status != "running" || len(hung.Tags) != 1 || hung.Tags[0] != "stuck" || hung.Started.IsZero() {
		t.Errorf("the hung supervisor's row lost its file-based fields: %+v", hung)
	}
	if cells := hung.Cells(time.Now()); cells[len(cells)-1] != "[screen not answering] hung-ready" {
		t.Errorf("its LAST cell = %q, want what it showed last, marked", cells[len(cells)-1])
	}

	// Another agent's change shows within the interval.
	l.swarm("kill", "other")
	changed := time.Now()
	for {
		if r := rowOf(snapshot(), top.KindWorker, "other"); r != nil && !r.Live {
			break
		}
		if d := time.Since(changed); d > interval {
			t.Fatalf("the other agent's end not shown %v after it (a hung supervisor holds it)", d.Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the other agent's end shown after %v", time.Since(changed).Round(time.Millisecond))

	// --once: the hung one waited for at most the Timeout, and said so.
	start := time.Now()
	rows, err := l.model().Refresh(ctx)
	if d := time.Since(start); d > interval {
		t.Errorf("--once took %v with a hung supervisor", d.Round(time.Millisecond))
	}
	if err != nil {
		t.Fatal(err)
	}
	if r := rowOf(rows, top.KindWorker, "hung"); r == nil || r.ScreenError != "not answering" || !strings.Contains(strings.Join(r.Cells(time.Now()), " "), "not answering") {
		t.Errorf("--once's hung row: %+v", r)
	}
}
