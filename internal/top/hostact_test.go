package top_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/top"
)

// Acting on another host's agents (swarm top --hosts): the actions run by the host's swarm
// (top.ActVerb) over the poll's connection, on sshd hosts of the test lab. The hosts share this
// machine's file system: a host's workers are spawned here into the host's swarm directory,
// and acted on over ssh.

// hostSwarm runs this machine's swarm binary on host i's swarm directory (as the host's own
// would: the file system is shared), in dir.
func (l *hostLab) hostSwarm(t *testing.T, i int, dir string, args ...string) string {
	t.Helper()
	c := exec.Command(swarmBin, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "SWARM_DIR="+l.hosts[i].Env["SWARM_DIR"])
	out, err := testenv.CombinedOutput(c, testenv.CommandBound)
	if err != nil && args[0] != "kill" {
		t.Fatalf("swarm %s on %s: %v\n%s", strings.Join(args, " "), l.hosts[i].Name, err, out)
	}
	return string(out)
}

// hostRepo makes a git repository in host i's directory, and kills the host's workers when the
// test ends (they were started by this test, on the shared file system).
func (l *hostLab) hostRepo(t *testing.T, i int) string {
	t.Helper()
	repo := filepath.Join(l.hosts[i].Repo, "repo")
	if err := testenv.GitRepo(repo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.hostSwarm(t, i, repo, "kill", "--all") })
	return repo
}

// hostRow waits (polling the hosts, at most 20 s) for host's row of kind and name that ok
// holds of, and returns it.
func hostRow(t *testing.T, m *top.Model, host string, kind top.Kind, name string, ok func(*top.Row) bool) *top.Row {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last []*top.Row
	for time.Now().Before(deadline) {
		rows, err := m.Refresh(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		last = rows
		if i := slices.IndexFunc(rows, func(r *top.Row) bool {
			return r.Host == host && r.Kind == kind && r.Name == name && ok(r)
		}); i >= 0 {
			return rows[i]
		}
	}
	var names []string
	for _, r := range last {
		names = append(names, r.Host+"/"+r.Name+"/"+r.Status+"/"+r.LastLine)
	}
	t.Fatalf("no %s row %s on %s as wanted within 20s; rows: %v", kind, name, host, names)
	return nil
}

func agentScript(t *testing.T) string {
	t.Helper()
	agent, err := filepath.Abs("../../cmd/swarm/testdata/agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	return agent
}

// TestHostActions: on host h1, a worker in a worktree with changes: the diff shows them, a
// line sent reaches the agent, the shell's ssh -t lands in its worktree, a new worker starts
// there; what spawn refuses (a bad name) is refused in the host's words, naming the host; a
// row whose name would be an option never reaches ssh; a kill stops the agent.
func TestHostActions(t *testing.T) {
	l := newHostLab(t, 1, 0)
	repo := l.hostRepo(t, 0)
	l.hostSwarm(t, 0, repo, "spawn", "--name", "w1", "--worktree", "--ready-wait", "--", agentScript(t))
	wt := filepath.Join(l.hosts[0].Repo, "repo-worktrees", "w1")
	if err := os.WriteFile(filepath.Join(wt, "new.txt"), []byte("a new file \x1b]0;retitled\x07here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hw := l.watch(t, top.HostOptions{Every: 200 * time.Millisecond, Timeout: 3 * time.Second})
	m, err := top.Open(top.Sources{Hosts: hw})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w1 := hostRow(t, m, "h1", top.KindWorker, "w1", func(r *top.Row) bool { return r.Live })

	d, err := m.Diff(ctx, w1)
	if err != nil {
		t.Fatalf("diff of h1's w1: %v", err)
	}
	text := strings.Join(append(d.Files, d.Lines...), "\n")
	if d.Dir != wt || !slices.Contains(d.Files, "? new.txt") || !strings.Contains(text, "+a new file here") || strings.Contains(text, "\x1b") {
		t.Errorf("diff of h1's w1 = %+v, want new.txt in %s, its text without its escape", d, wt)
	}

	if err := m.Send(ctx, w1, "say hello from top"); err != nil {
		t.Fatalf("send to h1's w1: %v", err)
	}
	hostScreen(t, l, "w1", "agent says: hello from top")

	argv, err := m.ShellArgs(ctx, w1)
	if err != nil {
		t.Fatalf("shell on h1's w1: %v", err)
	}
	if argv[0] != "ssh" || !slices.Contains(argv, "-t") || slices.ContainsFunc(argv, func(a string) bool { return strings.HasPrefix(a, "ControlPath=") }) {
		t.Errorf("shell argv = %q, want ssh -t on a connection of its own", argv)
	}
	sh := exec.Command(argv[0], argv[1:]...)
	sh.Stdin = strings.NewReader("pwd\nexit\n")
	out, err := testenv.CombinedOutput(sh, testenv.CommandBound)
	if err != nil || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(wt)+`$`).Match(out) {
		t.Errorf("the shell's pwd: %v\n%s\nwant %s", err, out, wt)
	}

	// Refused as spawn refuses it, in the host's words.
	want := "host h1: " + swarm.CheckName("bad.name", false).Error()
	if _, err := m.SpawnLike(ctx, w1, "bad.name", "", time.Second); err == nil || err.Error() != want {
		t.Errorf("new worker bad.name on h1: %v, want %q", err, want)
	}
	if _, err := m.SpawnLike(ctx, w1, "w2", "say started from top", 30*time.Second); err != nil {
		t.Fatalf("new worker w2 on h1: %v", err)
	}
	hostRow(t, m, "h1", top.KindWorker, "w2", func(r *top.Row) bool { return r.Live })
	hostScreen(t, l, "w2", "agent says: started from top")

	// A host's name that would be an option is refused here, before any ssh.
	hostile := *w1
	hostile.Name = "-oProxyCommand=touch " + filepath.Join(repo, "pwned")
	if err := m.Send(ctx, &hostile, "x"); err == nil || !strings.HasPrefix(err.Error(), "host h1: the agent's name ") {
		t.Errorf("send to a row named %q: %v, want it refused by its name", hostile.Name, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "pwned")); err == nil {
		t.Errorf("a hostile name ran a command")
	}

	if err := m.Kill(ctx, w1); err != nil {
		t.Fatalf("kill h1's w1: %v", err)
	}
	hostRow(t, m, "h1", top.KindWorker, "w1", func(r *top.Row) bool { return !r.Live })
	// Now it is not running: the host says so.
	if err := m.Send(ctx, w1, "anyone?"); err == nil || err.Error() != "host h1: "+top.ErrNotLive.Error() {
		t.Errorf("send to h1's killed w1: %v, want the host's %q", err, top.ErrNotLive)
	}
}

// hostScreen waits (at most 20 s) for host h1's worker name's screen to show want, read from
// its supervisor here (the file system is shared), and returns it.
func hostScreen(t *testing.T, l *hostLab, name, want string) string {
	t.Helper()
	m, err := top.Open(top.Sources{SwarmDir: l.hosts[0].Env["SWARM_DIR"]})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var screen string
	for time.Now().Before(deadline) {
		rows, _ := m.Refresh(context.Background())
		if i := slices.IndexFunc(rows, func(r *top.Row) bool { return r.Name == name && r.Live }); i >= 0 {
			lines, _ := m.Screen(context.Background(), rows[i])
			if screen = strings.Join(lines, "\n"); strings.Contains(screen, want) {
				return screen
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("h1's %s never showed %q; it shows:\n%s", name, want, screen)
	return ""
}

// TestHostActionCutOff: a host cut off while an action runs there (a new worker waiting for
// its agent to be ready, up to 30 s): the action fails with one line naming the host within
// the connection's keep-alives, not the action's bound; the view's rows are not held meanwhile;
// once the host is marked offline an action fails at once, saying so.
func TestHostActionCutOff(t *testing.T) {
	l := newHostLab(t, 1, 0)
	repo := l.hostRepo(t, 0)
	// An agent that never shows a ready pattern: the new worker's prompt waits for it.
	l.hostSwarm(t, 0, repo, "spawn", "--name", "quiet", "--", "sh", "-c", "exec sleep 600")
	hw := l.watch(t, top.HostOptions{Every: 200 * time.Millisecond, Timeout: 2 * time.Second})
	m, err := top.Open(top.Sources{Hosts: hw})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	quiet := hostRow(t, m, "h1", top.KindWorker, "quiet", func(r *top.Row) bool { return r.Live })

	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := m.SpawnLike(ctx, quiet, "later", "hello", 30*time.Second)
		errc <- err
	}()
	// The action runs on the host once its new worker is in the host's state.
	state := filepath.Join(l.hosts[0].Env["SWARM_DIR"], "state.json")
	for deadline := time.Now().Add(20 * time.Second); ; {
		if b, _ := os.ReadFile(state); strings.Contains(string(b), `"later"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new worker never reached h1's state")
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.lab.Cut(t, 0)
	cut := time.Now()
	// The view is not held: its rows come at once.
	if _, err := m.Snapshot(ctx); err != nil || time.Since(cut) > 1500*time.Millisecond {
		t.Errorf("Snapshot during the action on a host cut off took %s (%v)", time.Since(cut), err)
	}
	select {
	case err := <-errc:
		if err == nil || !regexp.MustCompile(`^host h1 (stopped answering|: no answer within)`).MatchString(err.Error()) || strings.Contains(err.Error(), "\n") {
			t.Errorf("the action on h1 cut off: %v, want one line naming h1", err)
		}
		t.Logf("after %s (cut at %s): %v", time.Since(start).Round(time.Millisecond), cut.Sub(start).Round(time.Millisecond), err)
	case <-time.After(25 * time.Second):
		t.Fatal("the action on h1 cut off did not end within 25s")
	}

	waitHosts(t, hw, "marked h1 offline", func(s []top.HostStatus) bool { return !s[0].Online })
	at := time.Now()
	err = m.Send(ctx, quiet, "hello")
	if err == nil || !regexp.MustCompile(`^host h1 is offline \(seen \d+s ago\): `).MatchString(err.Error()) || time.Since(at) > time.Second {
		t.Errorf("send to h1 offline: %v after %s, want at once, saying h1 is offline", err, time.Since(at))
	}
}
