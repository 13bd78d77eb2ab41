package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/runevents"
	"github.com/creack/pty"
)

// runEvents are a run of three tasks on two slots: a completes in 10 s, b fails once.
func runEvents() []runevents.Event {
	return []runevents.Event{
		{Event: runevents.RunStart, Execution: "x", Tasks: 3, Slots: 2, Counts: &runevents.Counts{Pending: 3}},
		{Event: runevents.TaskStart, Task: "a", Attempt: 1, Agent: "local-1"},
		{Event: runevents.TaskStart, Task: "b", Attempt: 1, Agent: "local-2"},
		{Event: runevents.TaskEnd, Task: "a", Attempt: 1, Agent: "local-1", Commit: "abc", DurationSeconds: 10},
		{Event: runevents.TaskRetry, Task: "b", Attempt: 1, Agent: "local-2", Reason: "attempt 1: agent-exit-3", DurationSeconds: 20},
		{Event: runevents.TaskStart, Task: "b", Attempt: 2, Agent: "local-2"},
	}
}

// TestProgressStatus: the status line's counts, slots in use and estimate (the tasks not
// ended, in waves of the slots, each the mean time of the attempts ended: 2 tasks, 1 wave of
// 15 s).
func TestProgressStatus(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, false)
	for _, e := range runEvents() {
		p.Event(e)
	}
	st := p.status()
	for _, want := range []string{"1/3 done", "1/2 slots busy", "~15s left"} {
		if !strings.Contains(st, want) {
			t.Errorf("status() = %q, want %q in it", st, want)
		}
	}
	p.Event(runevents.Event{Event: runevents.TaskFailed, Task: "b", Attempt: 2, Agent: "local-2", Reason: "attempt 2: agent-exit-3", DurationSeconds: 30})
	p.Event(runevents.Event{Event: runevents.TaskBlocked, Task: "c", Reason: "depends on b, which is failed"})
	if st := p.status(); !strings.Contains(st, "1/3 done, 1 failed, 1 blocked | 0/2 slots busy") || strings.Contains(st, "left") {
		t.Errorf("status() at the end = %q", st)
	}
	// Not a terminal: plain lines, no control byte.
	out := b.String()
	if strings.ContainsAny(out, "\r\x1b") || !strings.Contains(out, "swarm: run: local-2: b: attempt 1: agent-exit-3; retrying\n") {
		t.Errorf("the lines not on a terminal:\n%q", out)
	}
}

// TestProgressQuiet: quiet prints no event, only the run's warnings.
func TestProgressQuiet(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, true)
	for _, e := range runEvents() {
		p.Event(e)
	}
	p.Write([]byte("swarm: warning: w\n"))
	p.Close()
	if b.String() != "swarm: warning: w\n" {
		t.Errorf("quiet printed %q", b.String())
	}
}

// TestProgressOnTerminal: on a terminal the status line is drawn below the lines and redrawn
// in place (carriage return, erase line); a line printed takes it away first; Close leaves
// the cursor at the start of a clean line.
func TestProgressOnTerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptmx.Close()
	var mu sync.Mutex
	var got bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			got.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	p := newProgress(tty, false)
	if !p.live {
		t.Fatal("a pty is not taken for a terminal")
	}
	for _, e := range runEvents() {
		p.Event(e)
	}
	p.Close()
	tty.Write([]byte("END\n"))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		done := strings.Contains(got.String(), "END")
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the terminal's output did not come")
		}
	}
	tty.Close()
	mu.Lock()
	out := got.String()
	mu.Unlock()
	// The line of a's end: the status line erased before it, drawn again after it.
	want := "\r\x1b[Kswarm: run: local-1: a: completed (attempt 1, abc)\r\n\r\x1b[K1/3 done | 1/2 slots busy | "
	if !strings.Contains(out, want) {
		t.Errorf("on the terminal:\n%q\nwant in it:\n%q", out, want)
	}
	if !strings.HasSuffix(out, "~15s left\r\x1b[KEND\r\n") {
		t.Errorf("Close did not leave a clean line:\n%q", out)
	}
}
