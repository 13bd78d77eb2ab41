package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
)

func TestRealWindows(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	if ws, err := c.ListWindows(ctx, "swarm"); ws != nil || err != nil {
		t.Fatalf("ListWindows before any server = %v, %v; want none", ws, err)
	}
	// The first window creates the session.
	pid10, err := c.NewWindow(ctx, "swarm", "w10", t.TempDir(), nil, "sleep", "30")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "#S")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	pid1, err := c.NewWindow(ctx, "swarm", "w1", dir, []string{"WORKER=w1"},
		"sh", "-c", `printf '%s %s %s' "$PWD" "$WORKER" "$1" > "$0"; sleep 30`, marker, "a;")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := waitFile(t, marker), dir+" w1 a;"; got != want {
		t.Errorf("window's program wrote %q, want %q", got, want)
	}
	want := []Window{{Name: "w10", PID: pid10, Status: -1}, {Name: "w1", PID: pid1, Status: -1}}
	if ws, err := c.ListWindows(ctx, "swarm"); !reflect.DeepEqual(ws, want) || err != nil {
		t.Errorf("ListWindows = %+v, %v; want %+v", ws, err, want)
	}
	if _, err := c.NewWindow(ctx, "swarm", "w1", t.TempDir(), nil, "sleep", "30"); !errors.Is(err, ErrExists) {
		t.Errorf("NewWindow of a second w1 = %v, want ErrExists", err)
	}
	for _, name := range []string{"1", "@1", "w.1", ""} {
		if _, err := c.NewWindow(ctx, "swarm", name, t.TempDir(), nil, "sleep", "30"); err == nil || errors.Is(err, ErrExists) {
			t.Errorf("NewWindow(%q) = %v, want a refusal: tmux 3.3a cannot target it exactly", name, err)
		}
	}
	// "w1" is a prefix of "w10": each window target finds its own window only.
	for name, pid := range map[string]int{"w1": pid1, "w10": pid10} {
		if got, err := c.PanePID(ctx, WindowTarget("swarm", name)); got != pid || err != nil {
			t.Errorf("PanePID(%s) = %d, %v; want %d", WindowTarget("swarm", name), got, err, pid)
		}
	}
	if err := c.SendText(ctx, WindowTarget("swarm", "w1"), "x"); err != nil {
		t.Errorf("SendText to window w1 = %v", err)
	}
	if err := c.KillWindow(ctx, WindowTarget("swarm", "w1")); err != nil {
		t.Fatal(err)
	}
	if got, err := c.PanePID(ctx, WindowTarget("swarm", "w1")); !errors.Is(err, ErrGone) {
		t.Errorf("PanePID of killed w1 = %d, %v; want ErrGone, not w10's pane", got, err)
	}
	if err := c.KillWindow(ctx, WindowTarget("swarm", "w1")); err != nil {
		t.Errorf("KillWindow of a gone window = %v, want nil", err)
	}
	// Killing the last window ends the session.
	if err := c.KillWindow(ctx, WindowTarget("swarm", "w10")); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.HasSession(ctx, "swarm"); ok || err != nil {
		t.Errorf("HasSession after its last window was killed = %v, %v", ok, err)
	}
}

// TestRealNewWindowRace starts workers at once in a session none of them finds: all but one
// new-session fail with "duplicate session" and must add a window instead.
func TestRealNewWindowRace(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var want []string
	for i := 0; i < 8; i++ {
		name := fmt.Sprintf("w%d", i)
		want = append(want, name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.NewWindow(ctx, "swarm", name, t.TempDir(), nil, "sleep", "30"); err != nil {
				t.Errorf("NewWindow(%s) = %v", name, err)
			}
		}()
	}
	wg.Wait()
	ws, err := c.ListWindows(ctx, "swarm")
	var got []string
	for _, w := range ws {
		got = append(got, w.Name)
	}
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) || err != nil {
		t.Errorf("ListWindows = %v, %v; want %v", got, err, want)
	}
}

// TestRealNewWindowAfterLastEnded starts a worker just after the last one ended, which took its
// session and the server with it (see TestRealNewSessionAfterLastEnded).
func TestRealNewWindowAfterLastEnded(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	for i := 0; i < 25; i++ {
		if _, err := c.NewWindow(ctx, "swarm", "w", t.TempDir(), nil, "sleep", "30"); err != nil {
			t.Fatalf("run %d: NewWindow = %v", i, err)
		}
		if err := c.KillWindow(ctx, WindowTarget("swarm", "w")); err != nil {
			t.Fatalf("run %d: KillWindow = %v", i, err)
		}
	}
}
