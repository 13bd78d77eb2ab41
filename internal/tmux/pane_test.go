package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitCapture polls t's pane until its last lines hold want, and returns them.
func waitCapture(t *testing.T, c *Client, target Target, lines int, want string) string {
	t.Helper()
	var got string
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, err = c.Capture(context.Background(), target, lines); err == nil && strings.Contains(got, want) {
			return got
		}
	}
	t.Fatalf("Capture(%s, %d) = %q, %v; want it to hold %q", target, lines, got, err, want)
	return ""
}

func TestRealCapture(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	// 60 numbered lines scroll 36 into the history of the 80x24 screen of a detached session;
	// a line wider than the screen wraps; "end   " has trailing spaces.
	script := `i=1; while [ $i -le 60 ]; do echo "line $i"; i=$((i+1)); done; ` +
		`printf '%0100d\n' 0; echo 'end   '; sleep 30`
	if _, err := c.NewSession(ctx, "agent-bd-10", t.TempDir(), nil, "sh", "-c", script); err != nil {
		t.Fatal(err)
	}
	target := SessionTarget("agent-bd-10")
	got := waitCapture(t, c, target, 4, "end")
	if want := "line 59\nline 60\n" + strings.Repeat("0", 100) + "\nend\n"; got != want {
		t.Errorf("Capture(%s, 4) = %q, want %q", target, got, want)
	}
	if got, _ := c.Capture(ctx, target, 1); got != "end\n" {
		t.Errorf("Capture(%s, 1) = %q, want %q", target, got, "end\n")
	}
	// 40 lines reach back into the history (the wrapped line is one of them).
	if got, _ := c.Capture(ctx, target, 40); !strings.HasPrefix(got, "line 23\n") || strings.Count(got, "\n") != 40 {
		t.Errorf("Capture(%s, 40) = %q, want 40 lines from line 23", target, got)
	}
	// "agent-bd-1" is a prefix of the live session's name: an exact target must not find it.
	if got, err := c.Capture(ctx, SessionTarget("agent-bd-1"), 4); !errors.Is(err, ErrGone) {
		t.Errorf("Capture(agent-bd-1) = %q, %v; want ErrGone with only agent-bd-10 running", got, err)
	}
	if _, err := c.Capture(ctx, "agent-bd-10", 4); err == nil || errors.Is(err, ErrGone) {
		t.Errorf("Capture with a bare name = %v, want a refusal", err)
	}
	if _, err := c.Capture(ctx, target, 0); err == nil {
		t.Error("Capture of 0 lines succeeded")
	}
}

// TestRealSendText types a line a shell would interpret, a tmux key name and a tmux command
// separator into a program that records the line it reads.
func TestRealSendText(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "line")
	if _, err := c.NewSession(ctx, "agent-bd-10", t.TempDir(), nil,
		"sh", "-c", `IFS= read -r line; printf '%s' "$line" > "$0"; sleep 30`, marker); err != nil {
		t.Fatal(err)
	}
	target := SessionTarget("agent-bd-10")
	text := `-x $(echo no) 'q' Enter C-c héllo ✓ a;b \; ;`
	if err := c.SendText(ctx, target, text); err != nil {
		t.Fatal(err)
	}
	if err := c.SendKeys(ctx, target, "Enter"); err != nil {
		t.Fatal(err)
	}
	if got := waitFile(t, marker); got != text {
		t.Errorf("program read %q, want %q", got, text)
	}
	if err := c.SendText(ctx, SessionTarget("agent-bd-1"), "x"); !errors.Is(err, ErrGone) {
		t.Errorf("SendText to agent-bd-1 with only agent-bd-10 running = %v, want ErrGone", err)
	}
	if err := c.SendKeys(ctx, target); err == nil {
		t.Error("SendKeys with no key succeeded")
	}
}

// TestRealSendTextLong sends more than one tmux command can carry (16 KiB in tmux 3.3a), with
// multibyte characters across the cuts, to a terminal in raw mode (a canonical-mode line stops
// at 4 KiB on Linux).
func TestRealSendTextLong(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	// 32,012 bytes: four commands, each 8 KiB cut falling inside a '✓'.
	text := "abcd" + strings.Repeat("é✓abc", 4001)
	marker := filepath.Join(t.TempDir(), "text")
	if _, err := c.NewSession(ctx, "agent-bd-10", t.TempDir(), nil,
		"sh", "-c", `stty raw -echo; echo > "$0.raw"; head -c "$1" > "$0.tmp"; mv "$0.tmp" "$0"; sleep 30`, marker, strconv.Itoa(len(text))); err != nil {
		t.Fatal(err)
	}
	waitFile(t, marker+".raw") // the terminal is raw before the text arrives
	if err := c.SendText(ctx, SessionTarget("agent-bd-10"), text); err != nil {
		t.Fatal(err)
	}
	if got := waitFile(t, marker); got != text {
		t.Errorf("program read %d bytes, want the %d sent", len(got), len(text))
	}
}

// TestRealSendKeysInCopyMode presses C-c with the pane in copy mode, as when someone scrolls back
// in an attached client: tmux 3.3a would give the key to copy mode (which it cancels) instead
// of the program.
func TestRealSendKeysInCopyMode(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "int")
	if _, err := c.NewSession(ctx, "agent-bd-10", t.TempDir(), nil,
		"sh", "-c", `trap 'echo interrupted > "$0"; exit' INT; echo > "$0.trap"; while :; do sleep 0.05; done`, marker); err != nil {
		t.Fatal(err)
	}
	target := SessionTarget("agent-bd-10")
	waitFile(t, marker+".trap") // the trap is set
	if _, err := c.run(ctx, "copy-mode", "-t", string(target)); err != nil {
		t.Fatal(err)
	}
	if err := c.SendKeys(ctx, target, "C-c"); err != nil {
		t.Fatal(err)
	}
	if got := waitFile(t, marker); got != "interrupted\n" {
		t.Errorf("program wrote %q, want it interrupted", got)
	}
}

func TestRealPaneQueries(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	size := filepath.Join(t.TempDir(), "size")
	// The program reports its terminal's size once it changes from tmux 3.3a's 80x24.
	pid, err := c.NewSession(ctx, "agent-bd-10", t.TempDir(), nil, "sh", "-c",
		`while [ "$(stty size)" = "24 80" ]; do sleep 0.02; done; stty size > "$0"; sleep 30`, size)
	if err != nil {
		t.Fatal(err)
	}
	target := SessionTarget("agent-bd-10")
	if got, err := c.PanePID(ctx, target); got != pid || err != nil {
		t.Errorf("PanePID(%s) = %d, %v; want %d, the pid NewSession returned", target, got, err, pid)
	}
	if cols, rows, err := c.PaneSize(ctx, target); cols != 80 || rows != 24 || err != nil {
		t.Errorf("PaneSize(%s) = %d, %d, %v; want tmux 3.3a's default 80, 24", target, cols, rows, err)
	}
	if err := c.ResizeWindow(ctx, target, 132, 40); err != nil {
		t.Fatal(err)
	}
	if cols, rows, err := c.PaneSize(ctx, target); cols != 132 || rows != 40 || err != nil {
		t.Errorf("PaneSize(%s) after ResizeWindow = %d, %d, %v; want 132, 40", target, cols, rows, err)
	}
	if got := waitFile(t, size); got != "40 132\n" {
		t.Errorf("program's stty size = %q, want %q", got, "40 132\n")
	}
	if dead, _, err := c.PaneDead(ctx, target); dead || err != nil {
		t.Errorf("PaneDead(%s) = %v, %v for a running program", target, dead, err)
	}
	// "agent-bd-1" is a prefix of the live session's name: an exact target must not find it.
	// (display-message -p -t =agent-bd-1: would have answered for agent-bd-10's pane.)
	if got, err := c.PanePID(ctx, SessionTarget("agent-bd-1")); !errors.Is(err, ErrGone) {
		t.Errorf("PanePID(agent-bd-1) = %d, %v; want ErrGone with only agent-bd-10 running", got, err)
	}
	if _, _, err := c.PaneSize(ctx, WindowTarget("agent-bd-10", "nosuch")); !errors.Is(err, ErrGone) {
		t.Errorf("PaneSize of a missing window = %v, want ErrGone", err)
	}
	if err := c.ResizeWindow(ctx, SessionTarget("agent-bd-1"), 100, 30); !errors.Is(err, ErrGone) {
		t.Errorf("ResizeWindow(agent-bd-1) = %v, want ErrGone", err)
	}
}

// TestRealPaneDead turns remain-on-exit on, as a user's tmux.conf may: the pane outlives its
// program, and only PaneDead tells that the program is gone.
func TestRealPaneDead(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	start := filepath.Join(t.TempDir(), "go")
	if _, err := c.NewSession(ctx, "agent-bd-10", t.TempDir(), nil, "sh", "-c",
		`while [ ! -e "$0" ]; do sleep 0.02; done; exit 3`, start); err != nil {
		t.Fatal(err)
	}
	target := SessionTarget("agent-bd-10")
	if _, err := c.run(ctx, "set-option", "-w", "-t", string(target), "remain-on-exit", "on"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(start, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var dead bool
	var status int
	var err error
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if dead, status, err = c.PaneDead(ctx, target); err != nil || (dead && status != -1) {
			break
		}
	}
	switch {
	case dead && status == -1 && err == nil:
		// tmux before 3.6 with libutempter (Debian's 3.3a) can lose the SIGCHLD: see PaneDead.
		t.Logf("PaneDead(%s) = true, -1: tmux never collected the exit status", target)
	case !dead || status != 3 || err != nil:
		t.Errorf("PaneDead(%s) = %v, %d, %v; want true, 3, nil", target, dead, status, err)
	}
	if pid, err := c.PanePID(ctx, target); pid <= 0 || err != nil {
		t.Errorf("PanePID(%s) of a dead pane = %d, %v; want the old pid", target, pid, err)
	}
}

func TestParsePane(t *testing.T) {
	tests := []struct {
		in   string
		want paneInfo
		ok   bool
	}{
		{"2089\t80\t24\t0\t", paneInfo{pid: 2089, cols: 80, rows: 24, status: -1}, true},
		{"2089\t80\t24\t1\t3", paneInfo{pid: 2089, cols: 80, rows: 24, dead: true, status: 3}, true},
		{"2089\t80\t24\t1\t", paneInfo{pid: 2089, cols: 80, rows: 24, dead: true, status: -1}, true}, // signalled
		{"2089\t80\t24\t0", paneInfo{}, false},
		{"x\t80\t24\t0\t", paneInfo{}, false},
		{"", paneInfo{}, false},
	}
	for _, tt := range tests {
		got, err := parsePane(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parsePane(%q) = %+v, %v; want %+v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestRealQueriesWhileServerExits runs every query while the server is killed under it: each
// must answer or fail with ErrGone, never with a message classify does not know.
func TestRealQueriesWhileServerExits(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	target := SessionTarget("agent-bd-10")
	queries := map[string]func() error{
		"HasSession":   func() error { _, err := c.HasSession(ctx, "agent-bd-10"); return err },
		"ListSessions": func() error { _, err := c.ListSessions(ctx); return err },
		"KillSession":  func() error { return c.KillSession(ctx, "agent-bd-10") },
		"Capture":      func() error { _, err := c.Capture(ctx, target, 5); return err },
		"PanePID":      func() error { _, err := c.PanePID(ctx, target); return err },
		"SendText":     func() error { return c.SendText(ctx, target, "x") },
		"SendKeys":     func() error { return c.SendKeys(ctx, target, "Enter") },
	}
	for i := 0; i < 10; i++ {
		if _, err := c.NewSession(ctx, "agent-bd-10", t.TempDir(), nil, "sleep", "30"); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, len(queries))
		for name, q := range queries {
			go func() {
				if err := q(); err != nil && !errors.Is(err, ErrGone) {
					errs <- fmt.Errorf("%s: %w", name, err)
					return
				}
				errs <- nil
			}()
		}
		if err := c.KillServer(ctx); err != nil {
			t.Errorf("KillServer = %v", err)
		}
		for range queries {
			if err := <-errs; err != nil {
				t.Errorf("during kill-server, %v; want success or ErrGone", err)
			}
		}
	}
}
