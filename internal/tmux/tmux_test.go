package tmux

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestArgsAreExactAndShellFree(t *testing.T) {
	var got [][]string
	c := &Client{Socket: "/tmp/s.sock", Run: func(_ context.Context, args ...string) ([]byte, error) {
		got = append(got, args)
		return []byte("4242\n"), nil
	}}
	pid, err := c.NewSession(context.Background(), "agent-bd-1", "/repo", []string{"A=1"}, "-x", "$(rm -rf /)")
	if err != nil || pid != 4242 {
		t.Fatalf("NewSession = %d, %v", pid, err)
	}
	c.HasSession(context.Background(), "agent-bd-1")
	want := [][]string{
		{"-S", "/tmp/s.sock", "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "agent-bd-1", "-c", "/repo", "-e", "A=1", "--", "-x", "$(rm -rf /)"},
		{"-S", "/tmp/s.sock", "has-session", "-t", "=agent-bd-1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tmux args = %q, want %q", got, want)
	}
}

// realClient starts a private tmux server for the test, killed when it ends.
func realClient(t *testing.T) *Client {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	dir, err := os.MkdirTemp("", "tmx") // short: socket paths are limited to about 100 bytes
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{Socket: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		c.KillServer(context.Background())
		os.RemoveAll(dir)
	})
	return c
}

// waitFile returns the contents of path once it is non-empty, or fails the test after 5s.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(path); len(b) > 0 {
			return string(b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s still empty after 5s", path)
	return ""
}

// TestRealArgumentsAreLiteral passes words that tmux 3.3a itself would interpret: a final ';'
// (a command separator, even in an argument vector), a tmux command after it, and formats in
// the session name and directory.
func TestRealArgumentsAreLiteral(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "#{pane_pid}#S")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	words := []string{"a;", ";", "kill-server", `\;`, `b\`, "#{pane_pid}", "-x"}
	argv := append([]string{"sh", "-c", `printf '%s|' "$PWD" "$V" "$@" > "$0"; sleep 30`, marker}, words...)
	if _, err := c.NewSession(ctx, "s#{pane_pid}", dir, []string{"V=#S;"}, argv...); err != nil {
		t.Fatal(err)
	}
	want := dir + "|#S;|" + strings.Join(words, "|") + "|"
	if got := waitFile(t, marker); got != want {
		t.Errorf("program saw %q, want %q", got, want)
	}
	if ok, err := c.HasSession(ctx, "s#{pane_pid}"); !ok {
		t.Errorf("HasSession(%q) = %v, %v; the name was expanded", "s#{pane_pid}", ok, err)
	}
}

func TestRealSessionLifecycle(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	if ok, err := c.HasSession(ctx, "agent-x"); ok || err != nil {
		t.Fatalf("HasSession before any server = %v, %v; want false, nil", ok, err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	// The argument holds shell syntax: it must reach the program as one literal word.
	pid, err := c.NewSession(ctx, "agent-bd-10", t.TempDir(), []string{"FLEET_TEST=yes"},
		"sh", "-c", `printf '%s %s' "$FLEET_TEST" "$1" > "$2"; sleep 30`, "sh", "$(echo not-expanded)", marker)
	if err != nil {
		t.Fatal(err)
	}
	if pid <= 0 {
		t.Errorf("NewSession pid = %d", pid)
	}
	deadline := time.Now().Add(5 * time.Second)
	var b []byte
	for time.Now().Before(deadline) {
		if b, _ = os.ReadFile(marker); len(b) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if string(b) != "yes $(echo not-expanded)" {
		t.Errorf("session wrote %q, want the env var and the literal argument", b)
	}
	// "agent-bd-1" is a prefix of the live session's name: an exact target must not find it.
	if ok, _ := c.HasSession(ctx, "agent-bd-1"); ok {
		t.Error("HasSession(agent-bd-1) = true with only agent-bd-10 running: target is not exact")
	}
	if ok, _ := c.HasSession(ctx, "agent-bd-10"); !ok {
		t.Error("HasSession(agent-bd-10) = false, want true")
	}
	names, err := c.ListSessions(ctx)
	if err != nil || !reflect.DeepEqual(names, []string{"agent-bd-10"}) {
		t.Errorf("ListSessions = %v, %v", names, err)
	}
	if err := c.KillSession(ctx, "agent-bd-10"); err != nil {
		t.Fatal(err)
	}
	if err := c.KillSession(ctx, "agent-bd-10"); err != nil {
		t.Errorf("KillSession of a gone session = %v, want nil", err)
	}
	if args := c.AttachArgs("agent-bd-10"); !strings.Contains(strings.Join(args, " "), "attach -t =agent-bd-10") {
		t.Errorf("AttachArgs = %q", args)
	}
}

// TestRealNewSessionAfterLastEnded starts a session just after the last one ended, when tmux
// 3.3a may hand the command to the exiting server ("server exited unexpectedly": 55 to 103 of
// 400 new-sessions right after a kill-session, here).
func TestRealNewSessionAfterLastEnded(t *testing.T) {
	c := realClient(t)
	ctx := context.Background()
	n := 25
	if testing.Short() {
		n = 10
	}
	for i := 0; i < n; i++ {
		if _, err := c.NewSession(ctx, "a", t.TempDir(), nil, "sleep", "30"); err != nil {
			t.Fatalf("run %d: NewSession(a) = %v", i, err)
		}
		if err := c.KillSession(ctx, "a"); err != nil {
			t.Fatalf("run %d: KillSession(a) = %v", i, err)
		}
		if _, err := c.NewSession(ctx, "b", t.TempDir(), nil, "sleep", "30"); err != nil {
			t.Fatalf("run %d: NewSession(b) just after the last session ended = %v", i, err)
		}
		if ok, err := c.HasSession(ctx, "b"); !ok {
			t.Fatalf("run %d: HasSession(b) = %v, %v after NewSession(b) succeeded", i, ok, err)
		}
		if err := c.KillSession(ctx, "b"); err != nil {
			t.Fatalf("run %d: KillSession(b) = %v", i, err)
		}
	}
}
