package ui_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// How "within 1 s of the change" is measured, so that what is timed is swarm top's latency
// (inotify, its refresh, its render, tmux drawing the pane) and not the test's own delays nor
// how the machine schedules the agents:
//
//   - The change is timed on disk: a goroutine looks at the file that makes the row change
//     every few milliseconds, and takes the kernel's ctime of the first version it reads that
//     holds the change (the moment it was written, or renamed into place). Looking late only
//     finds the same ctime; a later version (a write that replaced it before it was read)
//     can only make the measured latency shorter.
//   - The pane is read through a tmux control-mode client (tmux -C): a capture-pane is one line
//     written to the server, no process started, so the pane can be read every 10 ms.
//   - The test fails only on proof: a capture that began more than 1 s after the change still
//     did not show it. A capture that did show it began after the frame was drawn or not long
//     before, so the logged figure (its start, less the change's time) is close; a test
//     goroutine that sleeps late makes no capture, so it cannot make the test fail.

// within is the bound: a row shows a change within 1 s of it.
const within = time.Second

// ctl is a tmux control-mode client on the UI's server.
type ctl struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	pipe *os.File // its stdout, read with a deadline
	out  *bufio.Reader
	mu   sync.Mutex

	answerBound time.Duration // how long an answer may take
}

// answerBound is how long the UI's control client may take to answer one command. Under load a
// tmux server has answered late, or not at all: read with no deadline, that was the package's
// 10-minute timeout, with no cleanup and no word of what the test waited for.
const answerBound = bound

func (l *lab) control() *ctl {
	l.t.Helper()
	c := exec.Command("tmux", "-S", l.sock, "-C", "attach", "-t", "ui")
	c.Env, c.Dir = l.env, l.ws
	k, err := startCtl(l.t, c, answerBound)
	if err != nil {
		l.t.Fatal(err)
	}
	// No %output notifications (the pane's bytes): only the answers to our commands.
	if _, err := k.do("refresh-client -f no-output"); err != nil {
		l.t.Fatal(err)
	}
	return k
}

// startCtl starts the control client c, ended with the test, and reads the attach's answer:
// a command sent before it is run by a client with no session yet ("no current client").
func startCtl(t testing.TB, c *exec.Cmd, answerBound time.Duration) (*ctl, error) {
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.WaitDelay = 5 * time.Second // the cleanup's Wait, should the client leave a child behind
	if err := c.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		in.Close()
		c.Process.Kill()
		c.Wait()
	})
	// StdoutPipe's reader is an *os.File of a pipe the runtime polls: it takes a deadline.
	pipe, ok := out.(*os.File)
	if !ok {
		return nil, fmt.Errorf("tmux control client: its stdout is a %T, not a pipe that takes a deadline", out)
	}
	k := &ctl{cmd: c, in: in, pipe: pipe, out: bufio.NewReader(pipe), answerBound: answerBound}
	if _, err := k.block("attach"); err != nil {
		return nil, err
	}
	return k, nil
}

// block reads the next answer (between %begin and %end or %error), the one to the command cmd,
// leaving out notifications; it gives up k.answerBound after it began, saying what it waited for.
func (k *ctl) block(cmd string) (string, error) {
	if err := k.pipe.SetReadDeadline(time.Now().Add(k.answerBound)); err != nil {
		return "", fmt.Errorf("tmux control client: %w", err)
	}
	var b strings.Builder
	in := false
	for {
		line, err := k.out.ReadString('\n')
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return "", fmt.Errorf("tmux control client: no answer to %q within %v (read so far: %q)", cmd, k.answerBound, b.String()+line)
		}
		if err != nil {
			return "", fmt.Errorf("tmux control client, waiting for the answer to %q: %w", cmd, err)
		}
		switch {
		case !in && strings.HasPrefix(line, "%begin "):
			in = true
		case in && (strings.HasPrefix(line, "%end ") || strings.HasPrefix(line, "%error ")):
			if strings.HasPrefix(line, "%error ") {
				return b.String(), fmt.Errorf("tmux: %s", strings.TrimSpace(b.String()))
			}
			return b.String(), nil
		case in:
			b.WriteString(line)
		}
	}
}

// do runs one command and returns its output. The first answer after the sync is ours: one
// command at a time.
func (k *ctl) do(cmd string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, err := fmt.Fprintln(k.in, cmd); err != nil {
		return "", fmt.Errorf("tmux control client, sending %q: %w", cmd, err)
	}
	return k.block(cmd)
}

// change is a change the test watches for on disk: found returns whether it has happened, and
// the ctime of the file version that holds it.
type change struct {
	mu   sync.Mutex
	at   time.Time
	seen bool
	stop chan struct{}
}

// watch starts looking for a change (before the test makes it): every 5 ms, found is asked.
func (l *lab) watch(found func() (time.Time, bool)) *change {
	c := &change{stop: make(chan struct{})}
	go func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if at, ok := found(); ok {
				c.mu.Lock()
				c.at, c.seen = at, true
				c.mu.Unlock()
				return
			}
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
		}
	}()
	l.t.Cleanup(func() {
		select {
		case <-c.stop:
		default:
			close(c.stop)
		}
	})
	return c
}

func (c *change) get() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at, c.seen
}

// fileHolds is a found func: path holds the change when ok says so of its content; the time is
// the ctime of the version read (fstat of the file read).
func fileHolds(path string, ok func(content string) bool) func() (time.Time, bool) {
	return func() (time.Time, bool) {
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return time.Time{}, false
		}
		defer f.Close()
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			return time.Time{}, false
		}
		b, err := io.ReadAll(io.LimitReader(f, 1<<20))
		if err != nil || !ok(string(b)) {
			return time.Time{}, false
		}
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec), true
	}
}

// anyOf is found when one of fs is, at the earliest time of those found.
func anyOf(fs ...func() (time.Time, bool)) func() (time.Time, bool) {
	return func() (time.Time, bool) {
		var first time.Time
		found := false
		for _, f := range fs {
			if at, ok := f(); ok && (!found || at.Before(first)) {
				first, found = at, true
			}
		}
		return first, found
	}
}

// A change of an agent's screen (LAST, ACTIVITY) is not a state file's: the UI reads the live
// agents' screens once an interval (1 s), so it shows at the next read, up to an interval after
// the agent printed, plus the read (the supervisors answer in parallel, each within 300 ms)
// and the draw. That is what is asserted for it, timed from the supervisor's log of the
// agent's output.
const screenWithin = time.Second + time.Second

// shownWithin waits until the pane shows what (ok), read every 10 ms through the control
// client, and fails the test when a capture that began more than within after the change c
// (timed on disk) did not show it yet. It returns the latency as measured (see above).
func (l *lab) shownWithin(what string, c *change, ok func(screen string) bool) time.Duration {
	l.t.Helper()
	return l.shownIn(what, within, c, ok)
}

// shownIn is shownWithin with a bound of its own.
func (l *lab) shownIn(what string, within time.Duration, c *change, ok func(screen string) bool) time.Duration {
	l.t.Helper()
	if l.ctl == nil {
		l.ctl = l.control()
	}
	deadline := time.Now().Add(bound)
	var notShown time.Time // the start of the last capture that did not show it
	var last string
	for time.Now().Before(deadline) {
		start := time.Now()
		s, err := l.ctl.do("capture-pane -p -t ui")
		if err != nil {
			l.t.Fatalf("%s: reading the pane: %v", what, err)
		}
		last = s
		if ok(s) {
			at, seen := c.get()
			for wait := time.Now().Add(5 * time.Second); !seen && time.Now().Before(wait); at, seen = c.get() {
				time.Sleep(5 * time.Millisecond)
			}
			if !seen {
				l.t.Fatalf("%s: on the screen, but the change it shows was not seen on disk; the pane:\n%s", what, s)
			}
			if late := notShown.Sub(at); late > within {
				l.t.Errorf("%s: still not on the screen %v after the change (a capture that began then did not show it; it showed %v after)",
					what, late.Round(time.Millisecond), start.Sub(at).Round(time.Millisecond))
			}
			d := start.Sub(at)
			l.t.Logf("%s: shown %v after the change on disk", what, d.Round(time.Millisecond))
			return d
		}
		notShown = start
		time.Sleep(10 * time.Millisecond)
	}
	l.t.Fatalf("%s: not on the screen within %v; the pane:\n%s", what, bound, last)
	return 0
}

// A control client that never answers fails the test within its bound, naming the command it
// waited for: it was read with no deadline, and TestUIHungSupervisor hung until the package's
// 10-minute timeout, killed with no cleanup and no word of what it waited for.
func TestControlClientThatNeverAnswers(t *testing.T) {
	// A stand-in client: it reads the commands and says nothing.
	silent := exec.Command("sh", "-c", "while read -r line; do :; done")
	ended := make(chan error, 1)
	go func() {
		_, err := startCtl(t, silent, 200*time.Millisecond)
		ended <- err
	}()
	select {
	case err := <-ended:
		if err == nil || !strings.Contains(err.Error(), `no answer to "attach" within 200ms`) {
			t.Errorf("startCtl over a client that never answers = %v, want it to name the attach it waited for", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("startCtl over a client that never answers: no error 20 s after a bound of 200 ms")
	}
}
