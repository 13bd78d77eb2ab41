package supervise

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/testenv/lockedbuf"

	"github.com/agentfleet/fleet/internal/testenv/postmortem"
	"github.com/creack/pty"
)

// memRecorder keeps what the supervisor reports, for the tests to look at.
type memRecorder struct {
	mu       sync.Mutex
	started  []int
	finished []Outcome
	notes    []string
	failures int // Finished fails this many times before it succeeds
}

func (r *memRecorder) Started(_ context.Context, _ *Attempt, pid int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, pid)
	return nil
}

func (r *memRecorder) Finished(_ context.Context, _ *Attempt, out *Outcome, _ io.Writer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures > 0 {
		r.failures--
		return fmt.Errorf("disk full (test)")
	}
	r.finished = append(r.finished, *out)
	return nil
}

func (r *memRecorder) Lost(context.Context, *Entry, *Outcome) (bool, error) { return false, nil }

func (r *memRecorder) Annotate(_ context.Context, _ *Attempt, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, note)
}

// syncBuffer is a log written by several goroutines and read while they write.
type syncBuffer = lockedbuf.Buffer

// newSupervisor opens a supervisor on a fresh state directory, closed when the test ends.
func newSupervisor(t *testing.T, name string, input *os.File, console io.Writer) *Supervisor {
	t.Helper()
	if console == nil {
		console = &syncBuffer{}
	}
	s := &Supervisor{Layout: Layout{Dir: t.TempDir()}, Tool: "test", Name: name, Backend: BackendProcess,
		Console: console, Input: input}
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	// A failed test shows the agent's log, the registry entry and the supervisor's console.
	t.Cleanup(func() {
		postmortem.OnFailure(t, s.Layout.Dir)
		if b, ok := console.(*syncBuffer); ok && t.Failed() {
			t.Logf("the supervisor's console:\n%s", b)
		}
	})
	return s
}

func shAttempt(s *Supervisor, n int, script string) *Attempt {
	return &Attempt{Name: s.Name, Number: n, Dir: s.Layout.Dir, Argv: []string{"/bin/sh", "-c", script},
		Env: os.Environ(), Terminal: true, KillGrace: time.Second, LogPath: s.Layout.LogPath(s.Name)}
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// control dials the supervisor's control socket.
func control(t *testing.T, s *Supervisor) *Control {
	t.Helper()
	c, err := DialControl(s.Layout.SocketPath(s.Name), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func runAsync(s *Supervisor, a *Attempt, rec Recorder) <-chan Outcome {
	ch := make(chan Outcome, 1)
	go func() { ch <- s.Run(context.Background(), a, rec) }()
	return ch
}

func TestAgentSeesATerminalAndItsExitCodeComesBack(t *testing.T) {
	s := newSupervisor(t, "tty", nil, nil)
	rec := &memRecorder{}
	a := shAttempt(s, 1, `test -t 0 && test -t 1 && test -t 2 && echo "on a terminal, TERM=$TERM"; exit 7`)
	out := s.Run(context.Background(), a, rec)
	if out.Status != StatusFailed || out.ExitCode != 7 || out.Reason != "agent-exit-7" {
		t.Errorf("outcome = %s %d %s, want failed 7 agent-exit-7", out.Status, out.ExitCode, out.Reason)
	}
	if !strings.Contains(out.Summary, "on a terminal, TERM=xterm-256color") {
		t.Errorf("summary = %q, want the agent to see a terminal and TERM", out.Summary)
	}
	if len(rec.started) != 1 || len(rec.finished) != 1 || rec.finished[0].ExitCode != 7 {
		t.Errorf("recorder saw started %v finished %v, want one of each", rec.started, rec.finished)
	}

	// "terminal": false keeps pipes.
	a = shAttempt(s, 2, `test -t 1 && echo tty || echo pipe`)
	a.Terminal = false
	if out := s.Run(context.Background(), a, rec); out.Summary != "pipe" || out.Status != StatusDone {
		t.Errorf("on pipes: %s %q, want done \"pipe\"", out.Status, out.Summary)
	}
}

func TestLogIsCompleteByteForByte(t *testing.T) {
	s := newSupervisor(t, "bytes", nil, nil)
	raw := make([]byte, 3<<20)
	rand.Read(raw)
	// No newline: the terminal would (rightly) write it as CR LF.
	payload := base64.StdEncoding.EncodeToString(raw)
	file := filepath.Join(t.TempDir(), "payload")
	os.WriteFile(file, []byte(payload), 0o600)
	out := s.Run(context.Background(), shAttempt(s, 1, "cat "+file), &memRecorder{})
	if out.Status != StatusDone {
		t.Fatalf("outcome %s %s", out.Status, out.Reason)
	}
	got, _ := os.ReadFile(s.Layout.LogPath("bytes"))
	if !bytes.Equal(got, []byte(payload)) {
		t.Errorf("log has %d bytes, want the %d the agent wrote, identical", len(got), len(payload))
	}
}

func TestControlSocketSendsTextKeysAndReadsTheScreen(t *testing.T) {
	s := newSupervisor(t, "ctl", nil, nil)
	fi, err := os.Stat(s.Layout.SocketPath("ctl"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	rec := &memRecorder{}
	// The agent reads a line, echoes it, and reports the SIGINT its terminal sends on Ctrl-C.
	a := shAttempt(s, 1, `trap 'echo got-interrupt; exit 3' INT; printf 'ready> '; read line; echo "heard: $line"; while :; do sleep 0.1; done`)
	done := runAsync(s, a, rec)
	c := control(t, s)
	screenHas := func(want string) func() bool {
		return func() bool {
			r, err := c.Do(Request{Op: OpScreen, Lines: 5})
			return err == nil && strings.Contains(strings.Join(r.Screen, "\n"), want)
		}
	}
	eventually(t, "the prompt on the screen", screenHas("ready>"))
	// Shell syntax is text like any other: it reaches the agent literally.
	if _, err := c.Do(Request{Op: OpSend, Text: "$(touch /tmp/never) hi\r"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the echo", screenHas("heard: $(touch /tmp/never) hi"))
	if _, err := c.Do(Request{Op: OpKeys, Keys: []string{"interrupt"}}); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.ExitCode != 3 || !strings.Contains(out.Summary, "got-interrupt") {
		t.Errorf("after Ctrl-C: exit %d, summary %q; want 3 and got-interrupt", out.ExitCode, out.Summary)
	}
	if _, err := c.Do(Request{Op: OpKeys, Keys: []string{"no-such-key"}}); err == nil {
		t.Error("an unknown key was accepted")
	}
	if r, err := c.Do(Request{Op: OpStatus}); err != nil || r.Running {
		t.Errorf("status between attempts = %+v, %v; want not running", r, err)
	}

	// stop ends the attempt with the reason given.
	done = runAsync(s, shAttempt(s, 2, `while :; do sleep 0.1; done`), rec)
	eventually(t, "the second attempt", func() bool { r, err := c.Do(Request{Op: OpStatus}); return err == nil && r.Attempt == 2 })
	if _, err := c.Do(Request{Op: OpStop, Reason: "stopped-by-test"}); err != nil {
		t.Fatal(err)
	}
	if out := <-done; out.Reason != "stopped-by-test" || out.Status != StatusFailed {
		t.Errorf("stopped attempt: %s %s", out.Status, out.Reason)
	}
}

func TestPaneKeysAndSizeReachTheAgent(t *testing.T) {
	// The pane: the supervisor's stdin and stdout are a terminal whose other side is the test.
	paneMaster, paneTTY, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer paneMaster.Close()
	defer paneTTY.Close()
	pty.Setsize(paneMaster, &pty.Winsize{Cols: 100, Rows: 30})
	var shown syncBuffer
	go io.Copy(&shown, paneMaster)
	s := newSupervisor(t, "pane", paneTTY, paneTTY)
	a := shAttempt(s, 1, `echo "size $(stty size)"; read line; echo "typed: $line"; trap 'echo "size now $(stty size)"' WINCH; while :; do sleep 0.05; done`)
	done := runAsync(s, a, &memRecorder{})
	eventually(t, "the first size", func() bool { return strings.Contains(shown.String(), "size 30 100") })
	// Keys typed into the pane go to the agent.
	paneMaster.Write([]byte("hello\r"))
	eventually(t, "the typed line", func() bool { return strings.Contains(shown.String(), "typed: hello") })
	pty.Setsize(paneMaster, &pty.Winsize{Cols: 120, Rows: 40})
	syscall.Kill(os.Getpid(), syscall.SIGWINCH)
	eventually(t, "the new size", func() bool { return strings.Contains(shown.String(), "size now 40 120") })
	// Ctrl-C reaches the agent, not the supervisor.
	paneMaster.Write([]byte{3})
	out := <-done
	if out.Reason != "agent-signal-SIGINT" {
		t.Errorf("Ctrl-C in the pane: %s %s, want the agent ended by SIGINT", out.Status, out.Reason)
	}
	if s.Stopping() != "" {
		t.Errorf("the supervisor took the Ctrl-C: stopping = %q", s.Stopping())
	}
}

func TestWatchEndsAndAnnotatesTheAttempt(t *testing.T) {
	s := newSupervisor(t, "watch", nil, nil)
	rec := &memRecorder{}
	a := shAttempt(s, 1, `echo working; sleep 0.3; echo ALL-DONE; while :; do sleep 0.1; done`)
	a.WatchEvery = 50 * time.Millisecond
	a.Watch = func(w *WatchState) Verdict {
		lines := strings.Join(w.Screen(10), "\n")
		if strings.Contains(lines, "ALL-DONE") {
			return Verdict{Stop: true, Reason: "done-pattern"}
		}
		if strings.Contains(lines, "working") {
			return Verdict{Note: "busy"}
		}
		return Verdict{}
	}
	out := s.Run(context.Background(), a, rec)
	if out.Status != StatusDone || out.Reason != "done-pattern" {
		t.Errorf("outcome %s %s, want done done-pattern", out.Status, out.Reason)
	}
	if len(rec.notes) == 0 || rec.notes[0] != "busy" {
		t.Errorf("notes = %v, want busy first", rec.notes)
	}

	// Inactivity: no change of the screen for a while.
	a = shAttempt(s, 2, `echo one; while :; do sleep 0.1; done`)
	a.WatchEvery = 50 * time.Millisecond
	a.Watch = func(w *WatchState) Verdict {
		if w.SinceChange > 300*time.Millisecond {
			return Verdict{Stop: true, Status: StatusFailed, Reason: "inactivity"}
		}
		return Verdict{}
	}
	if out := s.Run(context.Background(), a, rec); out.Reason != "inactivity" || out.Status != StatusFailed {
		t.Errorf("outcome %s %s, want failed inactivity", out.Status, out.Reason)
	}
}

func TestRepeatedAttemptsInOneSupervisor(t *testing.T) {
	s := newSupervisor(t, "loop", nil, nil)
	rec := &memRecorder{}
	for i := 1; i <= 3; i++ {
		out := s.Run(context.Background(), shAttempt(s, i, fmt.Sprintf("echo iteration %d; exit %d", i, i-1)), rec)
		if out.ExitCode != int64(i-1) || !strings.Contains(out.Summary, fmt.Sprintf("iteration %d", i)) {
			t.Errorf("attempt %d: exit %d summary %q", i, out.ExitCode, out.Summary)
		}
		e, _ := s.Layout.ReadEntry("loop")
		if e == nil || e.Attempt != i || e.PID != os.Getpid() || e.Outcome != nil {
			t.Errorf("entry after attempt %d = %+v", i, e)
		}
	}
	if len(rec.finished) != 3 {
		t.Errorf("recorded %d outcomes, want 3", len(rec.finished))
	}
}

func TestStragglersAreStopped(t *testing.T) {
	s := newSupervisor(t, "strays", nil, nil)
	pidFile := filepath.Join(t.TempDir(), "pid")
	// A daemon in a session of its own that ignores SIGTERM: the process group kill misses it.
	a := shAttempt(s, 1, fmt.Sprintf(`setsid sh -c 'trap "" TERM; echo $$ > %s; exec sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.3; exit 0`, pidFile))
	a.KillGrace = 300 * time.Millisecond
	out := s.Run(context.Background(), a, &memRecorder{})
	if out.Stragglers < 1 {
		t.Errorf("stragglers = %d, want the daemon counted", out.Stragglers)
	}
	b, _ := os.ReadFile(pidFile)
	var pid int
	fmt.Sscan(string(b), &pid)
	if pid <= 0 {
		t.Fatalf("the daemon never started (%q)", b)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the daemon %d outlived its attempt", pid)
	}
}

// An agent's child that ignores SIGTERM, with dispatch's default 10 s grace (issue 17): the
// reaping gave up after about 5 s and the child lived on, re-parented to PID 1. The agent runs
// on pipes (the queue's agents, "terminal": false), where its exit hangs up no terminal. Not
// parallel: this process is the subreaper of every test's agents, and reaps what it finds.
func TestStragglerIgnoringTermIsKilledAfterTheGrace(t *testing.T) {
	s := newSupervisor(t, "deaf", nil, nil)
	pidFile := filepath.Join(t.TempDir(), "pid")
	a := shAttempt(s, 1, fmt.Sprintf(`sh -c 'trap "" TERM; echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 300' </dev/null >/dev/null 2>&1 &
while ! test -s %s; do sleep 0.01; done; exit 0`, pidFile, pidFile, pidFile, pidFile))
	a.Terminal, a.KillGrace = false, 10*time.Second
	start := time.Now()
	out := s.Run(context.Background(), a, &memRecorder{})
	took := time.Since(start)
	b, _ := os.ReadFile(pidFile)
	var pid int
	fmt.Sscan(string(b), &pid)
	if pid <= 0 {
		t.Fatalf("the child never started (%q)", b)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the child %d ignoring TERM outlived its attempt (reaping took %s, grace 10s)", pid, took)
	}
	if out.Stragglers != 1 {
		t.Errorf("stragglers = %d, want 1", out.Stragglers)
	}
	if took < a.KillGrace {
		t.Errorf("the attempt ended after %s, before the grace (%s) the child was owed", took, a.KillGrace)
	}
}

func TestFailedRecordKeepsTheOutcomeInTheEntry(t *testing.T) {
	s := newSupervisor(t, "keep", nil, nil)
	rec := &memRecorder{failures: 2}
	out := s.Run(context.Background(), shAttempt(s, 1, "exit 4"), rec)
	if len(rec.finished) != 1 || rec.finished[0].ExitCode != 4 || out.ExitCode != 4 {
		t.Errorf("finished = %+v after two failed writes, want the outcome written on the third", rec.finished)
	}
	if e, _ := s.Layout.ReadEntry("keep"); e == nil || e.Outcome != nil {
		t.Errorf("entry = %+v, want it kept without an outcome once written", e)
	}
}

func TestTimeoutStopsTheAgent(t *testing.T) {
	s := newSupervisor(t, "slow", nil, nil)
	a := shAttempt(s, 1, `trap "" TERM; while :; do sleep 0.1; done`)
	a.Timeout, a.KillGrace = 300*time.Millisecond, 200*time.Millisecond
	out := s.Run(context.Background(), a, &memRecorder{})
	if out.Status != StatusTimeout || out.ExitCode != 124 || out.Reason != "watch-timeout-0s" {
		t.Errorf("outcome %s %d %s, want timeout 124 watch-timeout-0s", out.Status, out.ExitCode, out.Reason)
	}
}

// TestInactivityStopsAQuietAgent: an agent that prints, then nothing, is stopped once it has
// been quiet for Inactivity, while one that keeps printing for longer than that is left to end
// (issue 19: the queue's tasks had no idle timeout).
func TestInactivityStopsAQuietAgent(t *testing.T) {
	s := newSupervisor(t, "quiet", nil, nil)
	a := shAttempt(s, 1, `echo started; sleep 30`)
	a.Inactivity, a.KillGrace = time.Second, 200*time.Millisecond
	start := time.Now()
	out := s.Run(context.Background(), a, &memRecorder{})
	if out.Status != StatusTimeout || out.ExitCode != 124 || out.Reason != "inactivity-timeout-1s" {
		t.Errorf("outcome %s %d %s, want timeout 124 inactivity-timeout-1s", out.Status, out.ExitCode, out.Reason)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("stopped after %s, want about 1 s", d)
	}
	s2 := newSupervisor(t, "chatty", nil, nil)
	a = shAttempt(s2, 1, `i=0; while [ $i -lt 25 ]; do echo $i; sleep 0.1; i=$((i + 1)); done`)
	a.Inactivity, a.KillGrace = 1500*time.Millisecond, 200*time.Millisecond
	if out := s2.Run(context.Background(), a, &memRecorder{}); out.Status != StatusDone || out.ExitCode != 0 {
		t.Errorf("an agent printing every 0.1 s for 2.5 s: outcome %s %d %s, want done 0", out.Status, out.ExitCode, out.Reason)
	}
}

func TestLongSocketPaths(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 200 {
		dir = filepath.Join(dir, "a-rather-long-directory-name")
	}
	os.MkdirAll(dir, 0o700)
	s := &Supervisor{Layout: Layout{Dir: dir}, Tool: "test", Name: "deep", Console: io.Discard}
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := DialControl(s.Layout.SocketPath("deep"), time.Second)
	if err != nil {
		t.Fatalf("dialing a %d-byte socket path: %v", len(s.Layout.SocketPath("deep")), err)
	}
	defer c.Close()
	if r, err := c.Do(Request{Op: OpStatus}); err != nil || r.Running {
		t.Errorf("status = %+v, %v", r, err)
	}
}

func TestHandoff(t *testing.T) {
	dir := t.TempDir()
	h, err := OfferHandoff(dir, []byte(`{"secret":"API_KEY=x"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got := make(chan []byte, 1)
	go func() {
		b, err := TakeHandoff(h.Path())
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pid, err := h.Give(ctx)
	if err != nil || pid != os.Getpid() {
		t.Errorf("Give = %d, %v; want this process's pid", pid, err)
	}
	if b := <-got; string(b) != `{"secret":"API_KEY=x"}` {
		t.Errorf("taken %q", b)
	}
	h.Close()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("left in the handoff directory: %v", entries)
	}
}

// The next supervisor of a name may start as soon as the last one recorded its attempt (its
// entry is gone) and before it has closed: the next one's control socket must survive the
// last one's Close (a loop's next iteration lost it, and typing its prompt failed).
func TestNextSupervisorOfANameKeepsItsControlSocket(t *testing.T) {
	dir := t.TempDir()
	open := func() *Supervisor {
		s := &Supervisor{Layout: Layout{Dir: dir}, Tool: "test", Name: "n", Backend: BackendProcess,
			Console: &syncBuffer{}, Once: true}
		if err := s.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	last := open()
	if out := last.Run(context.Background(), shAttempt(last, 1, "exit 0"), &memRecorder{}); out.Status != StatusDone {
		t.Fatalf("the last attempt: %s %s", out.Status, out.Reason)
	}
	if e, _ := last.Layout.ReadEntry("n"); e != nil {
		t.Fatalf("the entry is still there after a Once attempt was recorded: %+v", e)
	}
	next := open()
	defer next.Close()
	if next.entry.Control == "" {
		t.Fatal("the next supervisor has no control socket")
	}
	last.Close()
	c := control(t, next)
	if _, err := c.Do(Request{Op: OpStatus}); err != nil {
		t.Fatalf("the next supervisor's control socket after the last one closed: %v", err)
	}
}

// exitFirstRecorder is told of the start only once the agent has exited (a zombie, or reaped),
// so that the deadline, armed after the start is recorded, comes after the agent's own end.
type exitFirstRecorder struct{ memRecorder }

func (r *exitFirstRecorder) Started(ctx context.Context, a *Attempt, pid int) error {
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return r.memRecorder.Started(ctx, a, pid)
}

// TestExitBeforeTheDeadlineIsNoTimeout: an agent that exited 0 before its deadline came is
// done, however the supervisor's wait sees the two (a host's attempt once ended 0 and was
// recorded timeout, then retried: issue 18). The deadline here is 1 ns after the start is
// recorded, so both are ready at once; before the fix, one in two was a timeout.
func TestExitBeforeTheDeadlineIsNoTimeout(t *testing.T) {
	s := newSupervisor(t, "prompt", nil, nil)
	rec := &exitFirstRecorder{}
	for n := 1; n <= 20; n++ {
		a := shAttempt(s, n, "exit 0")
		a.Timeout = time.Nanosecond
		if out := s.Run(context.Background(), a, rec); out.Status != StatusDone || out.ExitCode != 0 {
			t.Fatalf("attempt %d: %s %d %s, want done 0: the agent had exited before its deadline", n, out.Status, out.ExitCode, out.Reason)
		}
	}
}

// slowPane is a console the tmux server does not read for a while (a loaded machine): every
// write waits until it is released.
type slowPane struct{ released chan struct{} }

func (p *slowPane) Write(b []byte) (int, error) {
	<-p.released
	return len(b), nil
}

// TestSlowPaneKeepsTheLastWords: the agent's last words reach the log and the outcome's summary
// however slow the pane is to take them. CI saw a usage-limit message missing from an AIWG
// iteration's log (its limit then read as a plain failure) and "output summary lacks the agent's
// words": the pane was written before the log, and drain cut the copy at its bound while the
// copy waited for the pane.
func TestSlowPaneKeepsTheLastWords(t *testing.T) {
	pane := &slowPane{released: make(chan struct{})}
	release := time.AfterFunc(8*time.Second, func() { close(pane.released) }) // past drain's bound
	defer release.Stop()
	s := newSupervisor(t, "slow", nil, pane)
	rec := &memRecorder{}
	a := shAttempt(s, 1, `echo "Claude AI usage limit reached|1764100000"; exit 1`)
	began := time.Now()
	out := s.Run(context.Background(), a, rec)
	// Not a timed test: the bound is the pane's 8 s, which Run must not wait out (it did).
	if took := time.Since(began); took >= 8*time.Second {
		t.Errorf("Run took %s: it waited for the pane", took)
	}
	if out.ExitCode != 1 || !strings.Contains(out.Summary, "usage limit reached") {
		t.Errorf("outcome = %s %d, summary %q; want exit 1 and the agent's last words", out.Status, out.ExitCode, out.Summary)
	}
	log, _ := os.ReadFile(a.LogPath)
	if !strings.Contains(string(log), "usage limit reached") {
		t.Errorf("log = %q; want the agent's last words", log)
	}
}
