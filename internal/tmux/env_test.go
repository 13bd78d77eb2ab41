package tmux

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestSpawnEnvironment (issue 17): what SpawnEnvironment says a new session's program gets is
// what tmux really gives it, for a client with another environment than the server's (cron's,
// against a server started from a login shell): the server's variables, values with quotes and
// newlines included, update-environment's taken from the client or removed. Issue 27: byte for
// byte (an ö, a tab) and with SHELL as tmux sets it, asked in the C locale, as cron asks.
func TestSpawnEnvironment(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	// The locale of the tmux clients SpawnEnvironment runs (this process's), not client's.
	t.Setenv("LC_ALL", "")
	t.Setenv("LC_CTYPE", "")
	t.Setenv("LANG", "C")
	sockDir, err := os.MkdirTemp("", "tmx")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	c := &Client{Socket: filepath.Join(sockDir, "s")}
	ctx := context.Background()
	defer c.KillServer(ctx)

	cron := []string{"PATH=/usr/bin:/bin:/cron-only", "HOME=/nonexistent", "SHELL=/bin/sh", "CRON_ONLY=1", "SSH_AUTH_SOCK=/tmp/cron-agent"}
	if env, running, err := c.SpawnEnvironment(ctx, cron); err != nil || running || !reflect.DeepEqual(env, cron) {
		t.Fatalf("no server: SpawnEnvironment = %q, %v, %v; want the client's own", env, running, err)
	}

	login := []string{"PATH=/usr/bin:/bin:/login", "HOME=" + sockDir, "LANG=fi_FI.UTF-8", "ANTHROPIC_API_KEY=sk-login",
		"ODD=a \"quoted\" $dollar `tick` back\\slash\nsecond=line", "DISPLAY=:0",
		"GIT_AUTHOR_NAME=J\u00f6rg\tM\u00fcller", "LATIN1=J\xf6rg\x01\x1b[m", "SHELL=/bin/bash"}
	start := exec.Command("tmux", "-S", c.Socket, "new-session", "-d", "-s", "login", "sleep", "600")
	start.Env = login
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("starting the server: %v: %s", err, out)
	}
	env, running, err := c.SpawnEnvironment(ctx, cron)
	if err != nil || !running {
		t.Fatalf("SpawnEnvironment = %v, %v", running, err)
	}

	// What tmux really gives a session made by a client with cron's environment.
	dump := filepath.Join(sockDir, "env")
	made := exec.Command("tmux", "-S", c.Socket, "new-session", "-d", "-s", "cron", "sh", "-c", "env -0 > "+dump+".tmp && mv "+dump+".tmp "+dump)
	made.Env = cron
	if out, err := made.CombinedOutput(); err != nil {
		t.Fatalf("new-session from cron's environment: %v: %s", err, out)
	}
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err = os.ReadFile(dump); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var real []string
	for _, kv := range strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00") {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "TERM", "TMUX", "TMUX_PANE", "PWD", "SHLVL", "_": // tmux's own, or sh's
			continue
		}
		real = append(real, kv)
	}
	var got []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != "PWD" {
			got = append(got, kv)
		}
	}
	sort.Strings(real)
	sort.Strings(got)
	if !reflect.DeepEqual(got, real) {
		t.Errorf("SpawnEnvironment =\n%q\ntmux gave\n%q", got, real)
	}
	for _, want := range []string{"ANTHROPIC_API_KEY=sk-login", "LANG=fi_FI.UTF-8", login[4], "SSH_AUTH_SOCK=/tmp/cron-agent",
		login[6], login[7], "SHELL=/bin/bash"} {
		if !contains(got, want) {
			t.Errorf("SpawnEnvironment lacks %q", want)
		}
	}
	for _, unwanted := range []string{"CRON_ONLY=1", "DISPLAY=:0"} {
		if contains(got, unwanted) {
			t.Errorf("SpawnEnvironment has %q", unwanted)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestParseShellEnv(t *testing.T) {
	in := "A=\"1\"; export A;\nunset B;\nC=\"x\\\"y\\$z\\\\w\n;export Q=\"; export C;\n"
	got, err := parseShellEnv(in)
	want := []string{"A=1", "C=x\"y$z\\w\n;export Q="}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseShellEnv = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"A=1\n", "A=\"1", "A=\"1\"; export B;\n", "=\"1\"; export ;\n"} {
		if _, err := parseShellEnv(bad); err == nil {
			t.Errorf("parseShellEnv(%q) = nil error", bad)
		}
	}
}

// TestSpawnEnvironmentServerGoneBetweenQuestions: the server that answered show-environment
// exits (its last session ended) before show-options or display-message. CI saw dispatch warn
// "no server running …; the agent gets dispatch's environment" for it. No server is no error:
// the new-session that follows starts a server from the client's environment.
func TestSpawnEnvironmentServerGoneBetweenQuestions(t *testing.T) {
	client := []string{"PATH=/usr/bin:/bin", "CRON_ONLY=1"}
	for _, gone := range []string{"show-options", "display-message"} {
		t.Run(gone, func(t *testing.T) {
			c := &Client{Socket: "/nonexistent/s", Run: func(ctx context.Context, args ...string) ([]byte, error) {
				switch verb := args[3]; { // -S socket -u verb
				case verb == gone:
					return nil, &Error{Args: args, Msg: "no server running on /nonexistent/s"}
				case verb == "show-environment":
					return []byte("LANG=\"fi_FI.UTF-8\"; export LANG;\n"), nil
				case verb == "show-options":
					return []byte("DISPLAY SSH_AUTH_SOCK\n"), nil
				default:
					t.Fatalf("unexpected tmux %q", args)
					return nil, nil
				}
			}}
			env, running, err := c.SpawnEnvironment(context.Background(), client)
			if err != nil || running || !reflect.DeepEqual(env, client) {
				t.Fatalf("SpawnEnvironment = %q, %v, %v; want the client's own, no server, no error", env, running, err)
			}
		})
	}
}

// TestSpawnShell: a default-shell tmux would not run gives the pane /bin/sh, as tmux's spawn does.
func TestSpawnShell(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(dir, "tmux")
	if err := os.WriteFile(self, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ option, want string }{
		{"/bin/bash", "/bin/bash"},
		{"bash", "/bin/sh"},
		{"", "/bin/sh"},
		{plain, "/bin/sh"},
		{self, "/bin/sh"},
		{filepath.Join(dir, "missing"), "/bin/sh"},
	} {
		if got := spawnShell(tt.option); got != tt.want {
			t.Errorf("spawnShell(%q) = %q, want %q", tt.option, got, tt.want)
		}
	}
}
