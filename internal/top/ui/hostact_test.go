package ui_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/sshlab"
	"github.com/agentfleet/fleet/internal/top"
	"github.com/agentfleet/fleet/internal/top/ui"
)

// TestActionsOnAHostsAgent: swarm top --hosts's view on a worker of an sshd host of the test
// lab (the hosts share this file system: the worker is spawned here into the host's swarm
// directory): s sends it a line over ssh; ! outside tmux says the ssh -t command line, inside
// tmux splits top's pane into an ssh -t session whose shell is in the worker's worktree there.
func TestActionsOnAHostsAgent(t *testing.T) {
	l := newLab(t)
	lab := sshlab.New(t, 1)
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	if err := testenv.GitRepo(repo); err != nil {
		t.Fatal(err)
	}
	hostSwarm := func(args ...string) string {
		t.Helper()
		c := exec.Command(filepath.Join(binDir, "swarm"), args...)
		c.Dir, c.Env = repo, append(os.Environ(), "SWARM_DIR="+filepath.Join(dir, "swarm"))
		out, err := testenv.CombinedOutput(c, testenv.CommandBound)
		if err != nil && args[0] != "kill" {
			t.Fatalf("swarm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { hostSwarm("kill", "--all") })
	agent, err := filepath.Abs("../../../cmd/swarm/testdata/agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	hostSwarm("spawn", "--name", "w1", "--worktree", "--ready-wait", "--", agent)
	wt := filepath.Join(dir, "repo-worktrees", "w1")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := lab.Hosts[0]
	hw, err := top.WatchHosts(ctx, []*remote.Host{{Name: h.Name, SSH: h.Dest, Identity: lab.Key, KnownHosts: lab.KnownHosts,
		Repo: dir, StateDir: filepath.Join(dir, "state"), Bin: binDir, Env: map[string]string{"SWARM_DIR": filepath.Join(dir, "swarm")}}},
		top.HostOptions{Every: 200 * time.Millisecond, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer hw.Close()
	m, err := top.Open(top.Sources{Hosts: hw})
	if err != nil {
		t.Fatal(err)
	}
	l.waitFor("h1's w1 in the rows", func() bool {
		rows, _ := m.Refresh(ctx)
		return slices.ContainsFunc(rows, func(r *top.Row) bool { return r.Host == "h1" && r.Name == "w1" && r.Live })
	})

	d := ui.NewDriver(ctx, m, ui.Options{Environ: []string{"PATH=" + os.Getenv("PATH")}})
	if !d.SelectOn("h1", "w1") {
		t.Fatalf("no row w1 of h1:\n%s", d.Screen())
	}
	d.Key("s")
	d.Type("say over-ssh")
	d.Key("enter")
	if msg := d.Message(); msg != "w1: sent" {
		t.Errorf("s on h1's w1: %q", msg)
	}
	l.waitFor("h1's w1 says over-ssh", func() bool { return strings.Contains(hostSwarm("peek", "w1"), "agent says: over-ssh") })

	d.SelectOn("h1", "w1")
	d.Key("!")
	if msg := d.Message(); !strings.HasPrefix(msg, "not inside tmux: open a shell there with: ssh ") ||
		!strings.Contains(msg, " -t -- "+h.Dest+" ") || !strings.Contains(msg, "cd "+wt+" && exec") {
		t.Errorf("! on h1's w1 outside tmux: %q", msg)
	}

	// Inside tmux (a private server, top's pane %0): a pane split from top's, ssh -t there.
	sock := filepath.Join(l.tmuxDir, "hostshell")
	if out, err := l.output("tmux", "-S", sock, "new-session", "-d", "-s", "top", "-x", "100", "-y", "30", "sh"); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	defer l.output("tmux", "-S", sock, "kill-server")
	env := append(append([]string{}, l.env...), "TMUX="+sock+",1,0", "TMUX_PANE=%0")
	d = ui.NewDriver(ctx, m, ui.Options{Environ: env})
	d.SelectOn("h1", "w1")
	d.Key("!")
	if msg := d.Message(); msg != "w1: shell on h1" {
		t.Errorf("! on h1's w1 inside tmux: %q", msg)
	}
	var pane string
	l.waitFor("a second pane", func() bool {
		out, _ := l.output("tmux", "-S", sock, "list-panes", "-t", "top", "-F", "#{pane_id}")
		ids := strings.Fields(string(out))
		if len(ids) == 2 {
			pane = ids[1]
		}
		return pane != ""
	})
	l.output("tmux", "-S", sock, "send-keys", "-t", pane, "-l", "echo at:$(pwd)")
	l.output("tmux", "-S", sock, "send-keys", "-t", pane, "Enter")
	l.waitFor("the shell on h1 in w1's worktree", func() bool {
		out, _ := l.output("tmux", "-S", sock, "capture-pane", "-p", "-J", "-t", pane)
		return strings.Contains(string(out), "at:"+wt)
	})
}
