package swarmrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/runevents"
)

// eventsManifest is a chain of four tasks on one slot, so that its events come in one order:
// a completes; k fails once, then completes; f fails twice (its last attempt for good); g,
// after f, is blocked.
const eventsManifest = `name: events
defaults: {agent: fake, retries: 1}
tasks:
  - {id: a, prompt: "write:a.txt", branch: a}
  - {id: k, prompt: "write:k.txt flaky:2", branch: k, depends_on: [a]}
  - {id: f, prompt: "fail", branch: f, depends_on: [k]}
  - {id: g, prompt: "write:g.txt", branch: g, depends_on: [f]}
`

// eventLine is what a test compares of an event: the transition, its task, attempt, status.
func eventLine(e runevents.Event) string {
	s := fmt.Sprintf("%s %s %d %s", e.Event, e.Task, e.Attempt, e.Status)
	if e.Event == runevents.RunStart || e.Event == runevents.RunEnd {
		s += fmt.Sprintf(" tasks=%d slots=%d counts=%s", e.Tasks, e.Slots, jsonOf(e.Counts))
	}
	return s
}

var eventsWant = []string{
	`run-start  0 running tasks=4 slots=1 counts={"completed":0,"failed":0,"blocked":0,"skipped":0,"pending":4,"retries":0}`,
	"task-start a 1 running",
	"task-end a 1 completed",
	"task-start k 1 running",
	"task-retry k 1 queued",
	"task-start k 2 running",
	"task-end k 2 completed",
	"task-start f 1 running",
	"task-retry f 1 queued",
	"task-start f 2 running",
	"task-failed f 2 failed",
	"task-blocked g 0 blocked",
	`run-end  0 failed tasks=0 slots=0 counts={"completed":2,"failed":1,"blocked":1,"skipped":0,"pending":0,"retries":2}`,
}

// TestRunEvents: every event of a run with a retry that succeeds, a task failed for good and
// one blocked, in order, as Config.Events is told them, as the events file keeps them, and as
// Watch reads them back once the run is over (returning the final state at once).
func TestRunEvents(t *testing.T) {
	w := newWorld(t)
	cfg := w.config(t, eventsManifest, 1)
	var mu sync.Mutex
	var got []runevents.Event
	cfg.Events = func(e runevents.Event) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	mu.Lock()
	defer mu.Unlock()
	checkEvents(t, "Config.Events", got, res.State.ExecutionID)
	for _, e := range got {
		switch e.Event {
		case runevents.TaskEnd:
			if e.Commit != *res.State.Tasks[e.Task].Trace.CommitSHA || e.Agent != "local-1" || e.Host != "testhost" || e.DurationSeconds <= 0 {
				t.Errorf("task-end = %+v", e)
			}
		case runevents.RunEnd:
			if e.WallSeconds <= 0 {
				t.Errorf("run-end's wall time = %v", e.WallSeconds)
			}
		case runevents.TaskFailed:
			if e.Reason != "attempt 2: agent-exit-3" {
				t.Errorf("task-failed's reason = %q", e.Reason)
			}
		case runevents.TaskBlocked:
			if e.Reason != "depends on f, which is failed" {
				t.Errorf("task-blocked's reason = %q", e.Reason)
			}
		}
	}
	p := Paths{Root: w.repo}
	b, err := os.ReadFile(runevents.Path(p.Root, res.State.ExecutionID))
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, e := range got {
		j, _ := json.Marshal(e)
		lines = append(lines, j)
	}
	if want := append(bytes.Join(lines, []byte("\n")), '\n'); !bytes.Equal(b, want) {
		t.Errorf("the events file:\n%s\nwant what Config.Events was told:\n%s", b, want)
	}
	var watched []runevents.Event
	st, err := Watch(context.Background(), p, "", func(e runevents.Event) { watched = append(watched, e) })
	if err != nil || st.ExecutionID != res.State.ExecutionID || st.Status != ExecFailed {
		t.Fatalf("Watch = %+v, %v", st, err)
	}
	checkEvents(t, "Watch", watched, res.State.ExecutionID)
}

func checkEvents(t *testing.T, what string, got []runevents.Event, id string) {
	t.Helper()
	var lines []string
	for i, e := range got {
		lines = append(lines, eventLine(e))
		if e.Seq != i+1 || e.Execution != id || e.Time == "" {
			t.Errorf("%s: event %d = %+v", what, i, e)
		}
	}
	if strings.Join(lines, "\n") != strings.Join(eventsWant, "\n") {
		t.Errorf("%s got the events:\n%s\nwant:\n%s", what, strings.Join(lines, "\n"), strings.Join(eventsWant, "\n"))
	}
}

// TestRunEventsConsumerHangs: a consumer of Config.Events that never returns holds nothing:
// the run ends as it would, its events file complete; the run's end waits for it eventDrain,
// then logs that it did not wait.
func TestRunEventsConsumerHangs(t *testing.T) {
	defer func(d time.Duration) { eventDrain = d }(eventDrain)
	eventDrain = 200 * time.Millisecond
	w := newWorld(t)
	cfg := w.config(t, eventsManifest, 1)
	hang := make(chan struct{})
	defer close(hang)
	cfg.Events = func(runevents.Event) { <-hang }
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	if s := res.State.Summary; s.Completed != 2 || s.Failed != 1 || s.Blocked != 1 {
		t.Errorf("summary %+v", s)
	}
	var watched []runevents.Event
	if _, err := Watch(context.Background(), Paths{Root: w.repo}, res.State.ExecutionID, func(e runevents.Event) { watched = append(watched, e) }); err != nil {
		t.Fatal(err)
	}
	checkEvents(t, "the events file", watched, res.State.ExecutionID)
	if !strings.Contains(w.log.String(), "did not take its last events") {
		t.Errorf("the log does not say the consumer was not waited for:\n%s", w.log.String())
	}
}

// TestEventsFileLinkRefused: a link planted in place of the events file (a resumed run
// appends to it) is never written through: the run goes on without its events file, saying so.
func TestEventsFileLinkRefused(t *testing.T) {
	w := newWorld(t)
	gate := filepath.Join(t.TempDir(), "started")
	doc := fmt.Sprintf("name: linked\ndefaults: {agent: fake}\ntasks:\n  - {id: a, prompt: \"touch:%s hang\", branch: a}\n", gate)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, w.config(t, doc, 1))
		done <- err
	}()
	waitFile(t, gate)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p := Paths{Root: w.repo}
	st := checkValid(t, p.State())
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("theirs\n"), 0o600)
	os.Remove(runevents.Path(p.Root, st.ExecutionID))
	if err := os.Symlink(target, runevents.Path(p.Root, st.ExecutionID)); err != nil {
		t.Fatal(err)
	}
	cfg := w.config(t, strings.Replace(doc, " hang", "", 1), 1)
	cfg.Resume = true
	res, err := Run(context.Background(), cfg)
	if err != nil || res.State.Status != ExecCompleted {
		t.Fatalf("resumed: %+v, %v\n%s", res, err, w.log.String())
	}
	if b, _ := os.ReadFile(target); string(b) != "theirs\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if !strings.Contains(w.log.String(), "not keeping the run's events") {
		t.Errorf("the log does not say the events are not kept:\n%s", w.log.String())
	}
	if _, err := Watch(context.Background(), p, st.ExecutionID, func(runevents.Event) {}); err == nil {
		t.Errorf("Watch read the events through a link")
	}
}

// TestRunEventsHostCutOff: the events of a run on two sshd hosts of the lab, the first cut
// off while its agent works: its host-offline (once), the task re-queued, run again on the
// other host after its deadline on the first, then its dependent; Config.Events and the events
// file alike.
func TestRunEventsHostCutOff(t *testing.T) {
	w := newWorld(t)
	lab, execs := labExecutors(t, w, 2, 1)
	tmp := t.TempDir()
	os.WriteFile(filepath.Join(tmp, "go-h2"), nil, 0o600)
	alog := filepath.Join(tmp, "agents.log")
	doc := fmt.Sprintf(`name: cut
defaults: {agent: fake, retries: 0, timeout: 4}
tasks:
  - {id: a, prompt: "alone:%[1]s hold:%[2]s write:a.txt", branch: a}
  - {id: b, prompt: "write:b.txt", branch: b, depends_on: [a]}
`, alog, tmp)
	cfg := w.config(t, doc, 0)
	cfg.Executors = []Executor{execs[0], execs[1]}
	var mu sync.Mutex
	var got []runevents.Event
	cfg.Events = func(e runevents.Event) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	}
	done := make(chan error, 1)
	var res *Result
	go func() {
		var err error
		res, err = Run(context.Background(), cfg)
		done <- err
	}()
	for deadline := time.Now().Add(45 * time.Second); !strings.Contains(readFile(alog), "a start h1-"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a never started on h1:\n%s", w.log.String())
		}
	}
	lab.Cut(t, 0)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v\n%s", err, w.log.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not end:\n%s", w.log.String())
	}
	mu.Lock()
	defer mu.Unlock()
	var lines []string
	for _, e := range got {
		lines = append(lines, fmt.Sprintf("%s %s %s %s %s", e.Event, e.Task, e.Agent, e.Host, e.Status))
	}
	want := []string{
		"run-start    running",
		"task-start a h1-1 h1 running",
		"host-offline   h1 ",
		"task-requeued a h1-1 h1 queued",
		"task-start a h2-1 h2 running",
		"task-end a h2-1 h2 completed",
		"task-start b h2-1 h2 running",
		"task-end b h2-1 h2 completed",
		"run-end    completed",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("the events:\n%s\nwant:\n%s\nthe run's log:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"), w.log.String())
	}
	var watched []runevents.Event
	if _, err := Watch(context.Background(), Paths{Root: w.repo}, res.State.ExecutionID, func(e runevents.Event) { watched = append(watched, e) }); err != nil || len(watched) != len(got) {
		t.Errorf("Watch read %d events (%v), want %d", len(watched), err, len(got))
	}
}
