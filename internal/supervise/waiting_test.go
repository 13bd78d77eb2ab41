package supervise

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// inputWatch records what the Watch is told of the agent waiting for input.
type inputWatch struct {
	mu      sync.Mutex
	shown   time.Time // when the screen first showed the text looked for
	waiting []time.Time
	ended   []time.Time
	last    bool
}

func (iw *inputWatch) watch(text string) Watch {
	return func(w *WatchState) Verdict {
		iw.mu.Lock()
		defer iw.mu.Unlock()
		now := time.Now()
		if iw.shown.IsZero() && strings.Contains(strings.Join(w.Screen(0), "\n"), text) {
			iw.shown = now
		}
		if w.WaitingInput != iw.last {
			if w.WaitingInput {
				iw.waiting = append(iw.waiting, now)
			} else {
				iw.ended = append(iw.ended, now)
			}
			iw.last = w.WaitingInput
		}
		return Verdict{}
	}
}

func (iw *inputWatch) counts() (shown time.Time, waiting, ended []time.Time) {
	iw.mu.Lock()
	defer iw.mu.Unlock()
	return iw.shown, append([]time.Time(nil), iw.waiting...), append([]time.Time(nil), iw.ended...)
}

// watchAgent runs argv under a supervisor, watched by iw for text; stop ends it.
func watchAgent(t *testing.T, name string, argv []string, iw *inputWatch, text string) (s *Supervisor, stop func()) {
	t.Helper()
	s = newSupervisor(t, name, nil, nil)
	a := &Attempt{Name: name, Number: 1, Dir: s.Layout.Dir, Argv: argv, Env: append(os.Environ(), "PS1=$ ", "HISTFILE=/dev/null"),
		Terminal: true, KillGrace: time.Second, LogPath: s.Layout.LogPath(name), Watch: iw.watch(text), WatchEvery: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Outcome, 1)
	go func() { done <- s.Run(ctx, a, &memRecorder{}) }()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(stop)
	return s, stop
}

func testdataPath(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWaitingForInputOfAPrompt: an agent that asks a question and waits is seen waiting
// within 2 s of its question on the screen, and no longer once it is answered.
func TestWaitingForInputOfAPrompt(t *testing.T) {
	iw := &inputWatch{}
	s, stop := watchAgent(t, "asks", []string{testdataPath(t, "asks.sh")}, iw, "(y/n)")
	defer stop()
	eventually(t, "the agent waiting for input", func() bool { _, w, _ := iw.counts(); return len(w) > 0 })
	shown, waiting, _ := iw.counts()
	if took := waiting[0].Sub(shown); took > 2*time.Second {
		t.Errorf("waiting for input seen %s after the question was on the screen, want within 2 s", took)
	}
	if _, err := control(t, s).Do(Request{Op: OpSend, Text: "y\r"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the answered agent no longer waiting", func() bool { _, _, e := iw.counts(); return len(e) > 0 })
}

// TestBusyAgentIsNeverWaiting: an agent printing prompt-looking lines without a pause, then
// quiet after a prompt-looking line while it works (not reading its terminal), is never seen
// waiting for input.
func TestBusyAgentIsNeverWaiting(t *testing.T) {
	iw := &inputWatch{}
	_, stop := watchAgent(t, "busy", []string{testdataPath(t, "busy.sh")}, iw, "more output")
	// Bounded generously: under load the thousands of lines take a while to go through.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if s, _, _ := iw.counts(); !s.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the busy agent did not print again after its pause within 60 s")
		}
	}
	stop()
	if _, waiting, _ := iw.counts(); len(waiting) > 0 {
		t.Errorf("a busy agent was seen waiting for input %d time(s)", len(waiting))
	}
}

// TestRealShellsWaitForInput: bash -i and python3 -i at their prompts wait for input, and a
// command bash runs in the foreground does not.
func TestRealShellsWaitForInput(t *testing.T) {
	t.Run("bash", func(t *testing.T) {
		bash, err := exec.LookPath("bash")
		if err != nil {
			t.Skip("no bash")
		}
		iw := &inputWatch{}
		s, stop := watchAgent(t, "bash", []string{bash, "--norc", "--noprofile", "-i"}, iw, "$")
		defer stop()
		eventually(t, "bash waiting for input", func() bool { _, w, _ := iw.counts(); return len(w) > 0 })
		if _, err := control(t, s).Do(Request{Op: OpSend, Text: "echo started; sleep 600\r"}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "bash running a command, not waiting", func() bool { _, _, e := iw.counts(); return len(e) > 0 })
	})
	t.Run("python3", func(t *testing.T) {
		python, err := exec.LookPath("python3")
		if err != nil {
			t.Skip("python3 is not installed")
		}
		iw := &inputWatch{}
		_, stop := watchAgent(t, "python", []string{python, "-i"}, iw, ">>>")
		defer stop()
		eventually(t, "python3 waiting for input", func() bool { _, w, _ := iw.counts(); return len(w) > 0 })
	})
}

func TestPromptLike(t *testing.T) {
	for _, c := range []struct {
		row  string
		want bool
	}{
		{"$ ", true}, {"bash-5.2$", true}, {">>> ", true}, {"... ", true}, {"> ", true}, {"❯", true},
		{"Password: ", true}, {"Continue? (y/n) ", true}, {"Overwrite? [Y/n]", true}, {"root@host:~# ", true},
		{"", false}, {"   ", false}, {"compiling 3/10", false}, {"done.", false}, {"agent says: hi", false},
	} {
		if got := promptLike(c.row); got != c.want {
			t.Errorf("promptLike(%q) = %v, want %v", c.row, got, c.want)
		}
	}
}
