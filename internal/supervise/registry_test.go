package supervise

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/proc"
)

// TestReadEntryAndClearNotEntry: what sits at an entry's path and is no entry (issue 9, items
// 1, 2 and 4) is told apart from a real entry, read without blocking or following, and cleared
// only when it is no one's.
func TestReadEntryAndClearNotEntry(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte(`{"name":"x","pid":1}`), 0o644)
	old := time.Now().Add(-2 * legacySpecAge)
	spec := `{"bead":"bd","argv":["claude"],"env":["API_KEY=secret"],"prompt":"p","run":{}}`
	tests := []struct {
		name    string
		plant   func(path string)
		entry   bool // ReadEntry returns an entry
		notEnt  bool // ReadEntry's error is ErrNotEntry
		cleared bool // ClearNotEntry removes it
	}{
		{"entry", func(p string) { os.WriteFile(p, []byte(`{"tool":"dispatch","name":"entry","pid":1}`), 0o600) }, true, false, false},
		{"old-entry", func(p string) { os.WriteFile(p, []byte(`{"bead":"old-entry","pid":1,"attempt":2}`), 0o600) }, true, false, false},
		{"link", func(p string) { os.Symlink(victim, p) }, false, true, true},
		{"fifo", func(p string) { syscall.Mkfifo(p, 0o600) }, false, true, true},
		{"dir", func(p string) { os.MkdirAll(filepath.Join(p, "x"), 0o700) }, false, true, false},
		{"bd.spec", func(p string) { os.WriteFile(p, []byte(spec), 0o600); os.Chtimes(p, old, old) }, false, true, true},
		{"fresh.spec", func(p string) { os.WriteFile(p, []byte(spec), 0o600) }, false, true, false},
		{"garbage", func(p string) { os.WriteFile(p, []byte("{}"), 0o600); os.Chtimes(p, old, old) }, false, false, false},
		{"other", func(p string) { os.WriteFile(p, []byte(`{"name":"someone","pid":1}`), 0o600) }, false, false, false},
	}
	for _, tt := range tests {
		path := l.EntryPath(tt.name)
		os.MkdirAll(filepath.Dir(path), 0o700)
		tt.plant(path)
		done := make(chan struct{})
		var e *Entry
		var err error
		go func() {
			e, err = l.ReadEntry(tt.name)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadEntry(%s) blocks", tt.name)
		}
		if (e != nil) != tt.entry || errors.Is(err, ErrNotEntry) != tt.notEnt {
			t.Errorf("ReadEntry(%s) = %+v, %v; want entry %v, ErrNotEntry %v", tt.name, e, err, tt.entry, tt.notEnt)
		}
		if e != nil && e.Name != tt.name {
			t.Errorf("ReadEntry(%s).Name = %q", tt.name, e.Name)
		}
		if got := l.ClearNotEntry(tt.name); got != tt.cleared {
			t.Errorf("ClearNotEntry(%s) = %v, want %v", tt.name, got, tt.cleared)
		}
		if _, err := os.Lstat(path); os.IsNotExist(err) != tt.cleared {
			t.Errorf("after ClearNotEntry(%s), the file exists: %v", tt.name, err == nil)
		}
	}
	if b, _ := os.ReadFile(victim); !strings.Contains(string(b), `"name":"x"`) {
		t.Errorf("the link's target changed: %q", b)
	}
}

// TestWaitExit: WaitExit returns when the supervisor's process exits, not before; at once for
// a pid that is no supervisor of the name (reused, or never one); at its limit for one that
// goes on.
func TestWaitExit(t *testing.T) {
	ctx := context.Background()
	// A stand-in supervisor: a process whose command line holds the verb and the name.
	start := func() *exec.Cmd {
		cmd := exec.Command("sh", "-c", "read line", "sh", SuperviseVerb, "w1")
		stdin, _ := cmd.StdinPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); cmd.Wait() })
		// Start returns once the exec has begun, before the kernel has set the new command
		// line (an empty /proc/PID/cmdline for a moment): wait for it to read as a supervisor.
		for deadline := time.Now().Add(10 * time.Second); !SupervisorAlive(cmd.Process.Pid, "w1"); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the stand-in supervisor never read as one")
			}
		}
		return cmd
	}
	cmd := start()
	t0 := time.Now()
	WaitExit(ctx, &Entry{PID: cmd.Process.Pid, Name: "w1"}, 300*time.Millisecond)
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Errorf("WaitExit returned after %v with the supervisor running; want its 300 ms limit", d)
	}
	t0 = time.Now()
	WaitExit(ctx, &Entry{PID: cmd.Process.Pid, Name: "another"}, time.Minute)
	if d := time.Since(t0); d > 30*time.Second {
		t.Errorf("WaitExit waited %v on a process that supervises another name", d)
	}
	done := make(chan struct{})
	go func() { WaitExit(ctx, &Entry{PID: cmd.Process.Pid, Name: "w1"}, 0); close(done) }()
	select {
	case <-done:
		t.Fatal("WaitExit returned while the supervisor ran")
	case <-time.After(100 * time.Millisecond):
	}
	cmd.Process.Kill()
	cmd.Wait()
	<-done
}

// TestSupervisorAliveServing: a supervisor serving a slot (its command line names no bead) is a
// bead's while the bead's entry, in the state directory of its command line, names its pid and
// its start time; not another bead's, not with another start time (a pid reused), and not once
// the entry names someone else.
func TestSupervisorAliveServing(t *testing.T) {
	dir := t.TempDir()
	l := Layout{Dir: dir}
	// bash keeps running itself (the trailing ':' keeps it from exec'ing sleep), its command
	// line a serving supervisor's.
	cmd := exec.Command("bash", "-c", "sleep 600; :", SuperviseVerb, "--state-dir", dir, "--handoff", ServeHandoff, "slot:local-1")
	if err := cmd.Start(); err != nil {
		t.Skipf("no bash: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	start, ok := proc.StartTime(pid)
	if !ok {
		t.Fatal("no start time for the stand-in supervisor")
	}
	for _, c := range []struct {
		name  string
		entry *Entry
		bead  string
		alive bool
	}{
		{"its entry", &Entry{Name: "x-a", PID: pid, Start: start}, "x-a", true},
		{"another bead", &Entry{Name: "x-a", PID: pid, Start: start}, "x-b", false},
		{"a reused pid", &Entry{Name: "x-a", PID: pid, Start: start + 1}, "x-a", false},
		{"no start time", &Entry{Name: "x-a", PID: pid}, "x-a", false},
		{"someone else's entry", &Entry{Name: "x-a", PID: pid + 1, Start: start}, "x-a", false},
	} {
		if err := l.WriteEntry(c.entry); err != nil {
			t.Fatal(err)
		}
		if got := SupervisorAlive(pid, c.bead); got != c.alive {
			t.Errorf("%s: SupervisorAlive = %v, want %v", c.name, got, c.alive)
		}
		l.RemoveEntry(c.entry.Name)
	}
}
