package tmux

import (
	"context"
	"errors"
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
