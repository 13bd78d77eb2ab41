package tmux

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// reply is one answer of the fake tmux in TestArgsAreExactAndShellFree.
type reply struct {
	out string
	err error
}

// TestArgsAreExactAndShellFree records the exact argument vector each method hands tmux: every
// target exact, argv after "--", a final ';' escaped, formats in names and directories doubled.
func TestArgsAreExactAndShellFree(t *testing.T) {
	const pane = "1\t4242\t80\t24\t0\t\n"
	noSession := &Error{Msg: "can't find session: swarm"}
	tests := []struct {
		name    string
		call    func(context.Context, *Client) error
		replies []reply // in order; "4242\n" once they run out
		want    [][]string
	}{
		{"NewSession", func(ctx context.Context, c *Client) error {
			_, err := c.NewSession(ctx, "agent-bd-1", "/repo/#1", []string{"A=1"}, "-x", "$(rm -rf /)", "a;", "kill-server")
			return err
		}, nil, [][]string{
			{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "agent-bd-1", "-c", "/repo/##1", "-e", "A=1", "--", "-x", "$(rm -rf /)", `a\;`, "kill-server"},
		}},
		{"NewSession again while the server exits", func(ctx context.Context, c *Client) error {
			_, err := c.NewSession(ctx, "s", "/", nil, "true")
			return err
		}, []reply{{err: &Error{Msg: "server exited unexpectedly"}}, {out: ""}}, [][]string{
			{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "s", "-c", "/", "--", "true"},
			{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "s", "-c", "/", "--", "true"},
			{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "s", "-c", "/", "--", "true"},
		}},
		{"HasSession", func(ctx context.Context, c *Client) error {
			_, err := c.HasSession(ctx, "agent-bd-1")
			return err
		}, nil, [][]string{{"has-session", "-t", "=agent-bd-1"}}},
		{"KillSession", func(ctx context.Context, c *Client) error {
			return c.KillSession(ctx, "agent-bd-1")
		}, nil, [][]string{{"kill-session", "-t", "=agent-bd-1"}}},
		{"Capture", func(ctx context.Context, c *Client) error {
			_, err := c.Capture(ctx, WindowTarget("swarm", "w1"), 50)
			return err
		}, nil, [][]string{{"capture-pane", "-p", "-J", "-t", "=swarm:=w1", "-S", "-50"}}},
		{"SendText", func(ctx context.Context, c *Client) error {
			return c.SendText(ctx, SessionTarget("agent-bd-1"), "-n $(x) Enter;")
		}, nil, [][]string{
			{"copy-mode", "-q", "-t", "=agent-bd-1:"},
			{"send-keys", "-l", "-t", "=agent-bd-1:", "--", `-n $(x) Enter\;`},
		}},
		{"SendKeys", func(ctx context.Context, c *Client) error {
			return c.SendKeys(ctx, WindowTarget("swarm", "w1"), "C-c", "Enter")
		}, nil, [][]string{
			{"copy-mode", "-q", "-t", "=swarm:=w1"},
			{"send-keys", "-t", "=swarm:=w1", "--", "C-c", "Enter"},
		}},
		{"PanePID", func(ctx context.Context, c *Client) error {
			_, err := c.PanePID(ctx, WindowTarget("swarm", "w1"))
			return err
		}, []reply{{out: pane}}, [][]string{{"list-panes", "-t", "=swarm:=w1", "-F", paneFormat}}},
		{"PaneSize", func(ctx context.Context, c *Client) error {
			_, _, err := c.PaneSize(ctx, SessionTarget("agent-bd-1"))
			return err
		}, []reply{{out: pane}}, [][]string{{"list-panes", "-t", "=agent-bd-1:", "-F", paneFormat}}},
		{"PaneDead", func(ctx context.Context, c *Client) error {
			_, _, err := c.PaneDead(ctx, WindowTarget("swarm", "w1"))
			return err
		}, []reply{{out: pane}}, [][]string{{"list-panes", "-t", "=swarm:=w1", "-F", paneFormat}}},
		{"ResizeWindow", func(ctx context.Context, c *Client) error {
			return c.ResizeWindow(ctx, WindowTarget("swarm", "w1"), 132, 40)
		}, nil, [][]string{{"resize-window", "-t", "=swarm:=w1", "-x", "132", "-y", "40"}}},
		{"ListWindows", func(ctx context.Context, c *Client) error {
			_, err := c.ListWindows(ctx, "swarm")
			return err
		}, []reply{{out: "w1\t4242\t80\t24\t0\t\n"}}, [][]string{
			{"list-windows", "-t", "=swarm", "-F", "#{window_name}\t#{pane_pid}\t#{pane_width}\t#{pane_height}\t#{pane_dead}\t#{pane_dead_status}"},
		}},
		{"NewWindow in a session", func(ctx context.Context, c *Client) error {
			_, err := c.NewWindow(ctx, "swarm", "w#1", "/wt/#1", []string{"A=1"}, "-x", "a;")
			return err
		}, []reply{{out: "w10\t4242\t80\t24\t0\t\n"}}, [][]string{
			{"list-windows", "-t", "=swarm", "-F", "#{window_name}\t#{pane_pid}\t#{pane_width}\t#{pane_height}\t#{pane_dead}\t#{pane_dead_status}"},
			{"new-window", "-d", "-P", "-F", "#{pane_pid}", "-t", "=swarm:", "-n", "w##1", "-c", "/wt/##1", "-e", "A=1", "--", "-x", `a\;`},
		}},
		{"NewWindow without its session", func(ctx context.Context, c *Client) error {
			_, err := c.NewWindow(ctx, "swarm", "w1", "/wt", nil, "agent")
			return err
		}, []reply{{err: noSession}}, [][]string{
			{"list-windows", "-t", "=swarm", "-F", "#{window_name}\t#{pane_pid}\t#{pane_width}\t#{pane_height}\t#{pane_dead}\t#{pane_dead_status}"},
			{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "swarm", "-n", "w1", "-c", "/wt", "--", "agent"},
		}},
		{"KillWindow", func(ctx context.Context, c *Client) error {
			return c.KillWindow(ctx, WindowTarget("swarm", "w1"))
		}, nil, [][]string{{"kill-window", "-t", "=swarm:=w1"}}},
		{"KillServer", func(ctx context.Context, c *Client) error {
			return c.KillServer(ctx)
		}, nil, [][]string{{"kill-server"}}},
	}
	for _, tt := range tests {
		var got [][]string
		replies := tt.replies
		c := &Client{Socket: "/tmp/s.sock", Run: func(_ context.Context, args ...string) ([]byte, error) {
			got = append(got, args)
			if len(replies) == 0 {
				return []byte("4242\n"), nil
			}
			r := replies[0]
			replies = replies[1:]
			return []byte(r.out), r.err
		}}
		if err := tt.call(context.Background(), c); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		var want [][]string
		for _, args := range tt.want {
			want = append(want, append([]string{"-S", "/tmp/s.sock"}, args...))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: tmux args =\n%q\nwant\n%q", tt.name, got, want)
		}
	}
}

// TestRefusedBeforeTmux calls methods with what tmux would not match exactly, or would misread:
// none of them may reach tmux.
func TestRefusedBeforeTmux(t *testing.T) {
	calls := map[string]func(context.Context, *Client) error{
		"Capture of a bare name": func(ctx context.Context, c *Client) error {
			_, err := c.Capture(ctx, "agent-bd-1", 5)
			return err
		},
		"SendText to a window index": func(ctx context.Context, c *Client) error {
			return c.SendText(ctx, WindowTarget("swarm", "1"), "x")
		},
		"SendKeys without a key": func(ctx context.Context, c *Client) error {
			return c.SendKeys(ctx, SessionTarget("agent-bd-1"))
		},
		"PanePID of a dotted session": func(ctx context.Context, c *Client) error {
			_, err := c.PanePID(ctx, SessionTarget("agent-bd-1.2"))
			return err
		},
		"ResizeWindow to 0 rows": func(ctx context.Context, c *Client) error {
			return c.ResizeWindow(ctx, SessionTarget("agent-bd-1"), 80, 0)
		},
		"NewSession with a dotted name": func(ctx context.Context, c *Client) error {
			_, err := c.NewSession(ctx, "agent-bd-1.2", "/", nil, "true")
			return err
		},
		"NewWindow named by digits": func(ctx context.Context, c *Client) error {
			_, err := c.NewWindow(ctx, "swarm", "7", "/", nil, "true")
			return err
		},
		"KillWindow of a window id": func(ctx context.Context, c *Client) error {
			return c.KillWindow(ctx, WindowTarget("swarm", "@7"))
		},
	}
	for name, call := range calls {
		c := &Client{Run: func(_ context.Context, args ...string) ([]byte, error) {
			t.Errorf("%s ran tmux %q", name, args)
			return nil, nil
		}}
		if err := call(context.Background(), c); err == nil {
			t.Errorf("%s succeeded, want a refusal", name)
		}
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

// waitFile returns the contents of path once it is non-empty, or fails the test after 30s.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(path); len(b) > 0 {
			return string(b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s still empty after 30s", path)
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

func TestRealCanceled(t *testing.T) {
	c := realClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.ListSessions(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("ListSessions with a canceled context = %v, want context.Canceled", err)
	}
}
