package hook

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/proc"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"notify", []string{"notify"}, false},
		{"  curl -d @- https://ntfy.sh/x ", []string{"curl", "-d", "@-", "https://ntfy.sh/x"}, false},
		{`sh -c 'cat > "$HOME/ev"; echo $x'`, []string{"sh", "-c", `cat > "$HOME/ev"; echo $x`}, false},
		{`a "b \"c\" d" e\ f ""`, []string{"a", `b "c" d`, "e f", ""}, false},
		{`a 'b`, nil, true},
		{`a \`, nil, true},
		{"   ", nil, true},
	} {
		got, err := Split(c.in)
		if (err != nil) != c.err || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%q) = %q, %v; want %q, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

// TestEvents: each event sent is one line of valid JSON on the hook's stdin, in order; Close
// waits for them.
func TestEvents(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "events")
	h, err := New(`sh -c 'cat >> "$0"' ` + out)
	if err != nil {
		t.Fatal(err)
	}
	cost := 0.25
	sent := []Event{{Kind: "queue", Event: Start, Plan: "p", Task: "t1", Iteration: 1, Status: "claimed"},
		{Kind: "queue", Event: End, Plan: "p", Task: "t1", Iteration: 1, Status: "done", CostUSD: &cost, Log: "/x.log"}}
	for _, e := range sent {
		h.Send(e)
	}
	h.Close()
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != len(sent) {
		t.Fatalf("the hook read %d lines, want %d:\n%s", len(lines), len(sent), b)
	}
	for i, l := range lines {
		var e Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i+1, err, l)
		}
		if e.Time == "" || e.Event != sent[i].Event || e.Task != "t1" {
			t.Errorf("event %d = %+v, want %+v with a time", i+1, e, sent[i])
		}
	}
}

// TestBounded: a hook that hangs (and its child) is killed at the bound; one that fails is a
// warning; neither holds the caller up beyond the bound.
func TestBounded(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child")
	var mu sync.Mutex
	var warned []string
	h, err := New(`sh -c 'sleep 300 & echo $! > "$0"; wait' ` + pidFile)
	if err != nil {
		t.Fatal(err)
	}
	h.Timeout = 300 * time.Millisecond
	h.Warn = func(err error) { mu.Lock(); warned = append(warned, err.Error()); mu.Unlock() }
	start := time.Now()
	h.Send(Event{Kind: "loop", Event: End, Loop: "l", Status: "stopped"})
	h.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a hanging hook held Close for %s", d)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "did not end within") {
		t.Errorf("warnings = %q, want one about the bound", warned)
	}
	b, _ := os.ReadFile(pidFile)
	if pid := strings.TrimSpace(string(b)); pid != "" {
		// SIGKILL is delivered at once but takes effect when the child is next scheduled: it
		// is gone (or a zombie) within moments, not necessarily when Close returns.
		gone := func() bool {
			st, err := os.ReadFile("/proc/" + pid + "/stat")
			return err != nil || strings.Contains(string(st), ") Z ")
		}
		for deadline := time.Now().Add(5 * time.Second); !gone() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if !gone() {
			t.Errorf("the hook's child %s outlived the kill by 5 s", pid)
		}
	}
	f, _ := New("false")
	if err := f.Run(context.Background(), Event{Event: Failure}); err == nil {
		t.Errorf("a failing hook: no error")
	}
}

// TestSendNeverBlocks: with a hook that hangs, the events past the QueueLen that wait are
// dropped with a warning; Send never holds its caller (a loop holding its workspace lock).
func TestSendNeverBlocks(t *testing.T) {
	h, err := New("sleep 300")
	if err != nil {
		t.Fatal(err)
	}
	h.Timeout = 10 * time.Millisecond // the sends outpace it all the same; Close is quick
	var mu sync.Mutex
	dropped := 0
	h.Warn = func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(err.Error(), "dropped") {
			dropped++
		}
	}
	sent := make(chan struct{})
	go func() {
		for i := 0; i < QueueLen+10; i++ {
			h.Send(Event{Kind: "loop", Event: Failure, Loop: "l", Iteration: i})
		}
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(30 * time.Second):
		t.Fatal("Send blocked behind a hook that hangs")
	}
	mu.Lock()
	if dropped < 9 {
		t.Errorf("%d events dropped, want at least 9 of the %d beyond the queue", dropped, 10)
	}
	mu.Unlock()
	h.Close() // every queued run ended, none left behind
}

// TestNothingOutlivesTheHook (issue 27): a hook's child that leaves the hook's process group
// and session (setsid) is killed all the same once the hook ends, whether the hook ended by
// itself or was killed at its bound.
func TestNothingOutlivesTheHook(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "hook.sh")
	// The escaped child writes its own pid ($$, kept by exec) once it runs in its new session;
	// the hook waits for that, then ends (or hangs past its bound).
	os.WriteFile(script, []byte(`setsid sh -c 'echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 1000' sh "$1" &
while [ ! -s "$1" ]; do sleep 0.01; done
[ "$2" = hang ] && sleep 1000
exit 0
`), 0o644)
	// A process of the caller's, not the hook's, is left alone.
	bystander := exec.Command("sleep", "1000")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bystander.Process.Kill(); bystander.Wait() })
	for _, how := range []string{"ends", "hang"} {
		pidFile := filepath.Join(dir, how+".pid")
		h, err := New("sh " + script + " " + pidFile + " " + how)
		if err != nil {
			t.Fatal(err)
		}
		h.Timeout = 3 * time.Second
		err = h.Run(context.Background(), Event{Kind: "loop", Event: End})
		if (err != nil) != (how == "hang") {
			t.Errorf("%s: Run = %v", how, err)
		}
		b, _ := os.ReadFile(pidFile)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if perr != nil {
			t.Fatalf("%s: the hook's child wrote no pid: %q", how, b)
		}
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		// The kill is sent before Run returns; the child is gone (or a zombie) when next
		// scheduled, so the check waits a little for that, never for the kill itself.
		gone := func() bool {
			st, ok := proc.ReadStat(pid)
			return !ok || st.State == 'Z'
		}
		for deadline := time.Now().Add(10 * time.Second); !gone() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if !gone() {
			t.Errorf("%s: the hook's setsid child %d outlived the hook", how, pid)
		}
	}
	if st, ok := proc.ReadStat(bystander.Process.Pid); !ok || st.State == 'Z' {
		t.Errorf("a process that was not the hook's was killed too")
	}
}

// TestCloseWithin: with a hook that hangs (its bound far away) and events queued behind it,
// CloseWithin returns at its own bound: the run under way killed, its child with it, the
// queued events dropped without a warning each; with a quick hook every event is run.
func TestCloseWithin(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child")
	h, err := New(`sh -c 'sleep 300 & echo $! >> "$0"; wait' ` + pidFile)
	if err != nil {
		t.Fatal(err)
	}
	h.Timeout = time.Hour
	var mu sync.Mutex
	var warned []string
	h.Warn = func(err error) { mu.Lock(); warned = append(warned, err.Error()); mu.Unlock() }
	for i := 1; i <= 3; i++ {
		h.Send(Event{Kind: "run", Event: "task-start", Task: "t", Iteration: i})
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(pidFile); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hook did not start")
		}
	}
	start := time.Now()
	if h.CloseWithin(100 * time.Millisecond) {
		t.Errorf("CloseWithin = true with a hook that hangs")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("CloseWithin took %s", d)
	}
	b, _ := os.ReadFile(pidFile)
	if pids := strings.Fields(string(b)); len(pids) != 1 {
		t.Errorf("the hook ran %d times, want once (the queued events dropped)", len(pids))
	} else if pid, _ := strconv.Atoi(pids[0]); pid > 0 {
		if st, ok := proc.ReadStat(pid); ok && st.State != 'Z' {
			t.Errorf("the hook's child %d outlived CloseWithin", pid)
		}
	}
	mu.Lock()
	if len(warned) != 0 {
		t.Errorf("warnings = %q, want none for a stop asked for", warned)
	}
	mu.Unlock()

	out := filepath.Join(dir, "events")
	q, _ := New(`sh -c 'cat >> "$0"' ` + out)
	for i := 0; i < 3; i++ {
		q.Send(Event{Kind: "run", Event: "task-start"})
	}
	if !q.CloseWithin(time.Minute) {
		t.Errorf("CloseWithin = false with a quick hook")
	}
	if b, _ := os.ReadFile(out); strings.Count(string(b), "\n") != 3 {
		t.Errorf("the quick hook read:\n%s", b)
	}
}
