package ui_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/top"
	"github.com/agentfleet/fleet/internal/top/ui"
)

// The actions on a worker's work, driven through the UI's model (ui.Driver) over real workers
// (cmd/swarm's scripted agent, in a worktree, on a private tmux socket) and real git: the diff
// pane (D), a line sent (s), a shell in the worktree (!), a new worker with a prompt (n), a
// stop (x); each refusing what its command refuses.

// actionLab is the lab with a worker w1 in a worktree of the workspace, with changes: a
// commit, a file changed and not committed, a new file; and a model of it whose swarm starts
// workers as swarm spawn does.
func actionLab(t *testing.T) (*lab, *top.Model, string) {
	l := newLab(t)
	agent, err := filepath.Abs("../../../cmd/swarm/testdata/agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	l.swarm("spawn", "--name", "w1", "--worktree", "--tmux", "--tmux-socket", "acts", "--ready-wait", "--", agent)
	wt := filepath.Join(filepath.Dir(l.ws), "ws-worktrees", "w1")
	git := func(args ...string) {
		t.Helper()
		if out, err := l.output("git", append([]string{"-C", wt, "-c", "user.name=t", "-c", "user.email=t@e"}, args...)...); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(wt, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("committed.txt", "from a commit\n")
	git("add", "committed.txt")
	git("commit", "-q", "-m", "w1's work")
	write("committed.txt", "from a commit\nand an edit not committed\n")
	write("untracked.txt", "new \x1b]0;retitled\x07file\n")
	m, err := top.Open(top.Sources{SwarmDir: l.swarmDir, StateDir: l.stateDir, Workspace: l.ws,
		Swarm: swarm.Options{Supervisor: []string{filepath.Join(binDir, "swarm"), "__supervise"}, Environ: l.env, TmuxTmpDir: l.tmuxDir}})
	if err != nil {
		t.Fatal(err)
	}
	return l, m, wt
}

func TestActionDiffPane(t *testing.T) {
	_, m, wt := actionLab(t)
	d := ui.NewDriver(context.Background(), m, ui.Options{Environ: nil})
	if !d.Select("w1") {
		t.Fatalf("no row w1:\n%s", d.Screen())
	}
	d.Key("D")
	if d.DiffLen() < 0 {
		t.Fatalf("no diff pane after D: %q\n%s", d.Message(), d.Screen())
	}
	s := d.Screen()
	for _, want := range []string{"diff w1 against ", "2 files changed:", "A committed.txt", "? untracked.txt",
		"+and an edit not committed", "+new file"} {
		if !strings.Contains(s, want) {
			t.Errorf("the diff pane lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "\x1b]0;") {
		t.Errorf("a file's escape sequence reached the terminal:\n%q", s)
	}
	// Scrolled: a diff longer than the pane.
	var long strings.Builder
	for i := range 200 {
		long.WriteString("line " + string(rune('a'+i%26)) + "\n")
	}
	os.WriteFile(filepath.Join(wt, "long.txt"), []byte(long.String()), 0o600)
	d.Key("esc")
	d.Key("D")
	n := d.DiffLen()
	if n < 200 {
		t.Fatalf("diff of %d lines, want over 200", n)
	}
	d.Key("down")
	d.Key("down")
	if d.DiffTop() != 2 {
		t.Errorf("after two downs the pane starts at line %d, want 2", d.DiffTop())
	}
	d.Key("G")
	if top := d.DiffTop(); top != n-27 || !strings.Contains(d.Screen(), "line ") {
		t.Errorf("G: the pane starts at %d of %d, want the last page (%d)", top, n, n-27)
	}
	d.Key("esc")
	if d.DiffLen() != -1 {
		t.Errorf("esc did not leave the diff pane")
	}
}

func TestActionsRefused(t *testing.T) {
	l, m, _ := actionLab(t)
	l.swarm("spawn", "--name", "plain", "--", "sh", "-c", "echo ready; exec cat")
	d := ui.NewDriver(context.Background(), m, ui.Options{})
	d.Select("plain")
	d.Key("D")
	if msg := d.Message(); !strings.Contains(msg, "plain has no worktree of its own") {
		t.Errorf("D on a worker without a worktree: %q", msg)
	}
	// A name taken, no name, a name tmux reads as an index: refused as swarm spawn refuses them.
	d.Select("w1")
	for line, want := range map[string]string{
		"w1 again": "already", "": "a new worker needs a name", "123 go": "all digits"} {
		d.Key("n")
		d.Type(line)
		d.Key("enter")
		if msg := d.Message(); !strings.Contains(msg, want) {
			t.Errorf("n %q: %q, want it refused (%q)", line, msg, want)
		}
	}
	// Another host's agent, the hosts not polled: every action refused, naming the host
	// (TestActionsOnAHostsAgent acts on one).
	for _, k := range []string{"D", "!", "s"} {
		// Each time: an action done refreshes the rows, from this machine's model (no hosts).
		d.SetRows([]*top.Row{{Host: "h1", Kind: top.KindWorker, Name: "far", Status: "running", Live: true}})
		d.Key(k)
		if k == "s" {
			d.Type("hi")
			d.Key("enter")
		}
		if msg := d.Message(); !strings.Contains(msg, "far runs on host h1") {
			t.Errorf("%s on a host's row: %q", k, msg)
		}
	}
}

func TestActionShellSendNewStop(t *testing.T) {
	l, m, wt := actionLab(t)
	// Not inside tmux: the way there is said.
	d := ui.NewDriver(context.Background(), m, ui.Options{Environ: []string{"PATH=" + os.Getenv("PATH")}})
	d.Select("w1")
	d.Key("!")
	if msg := d.Message(); msg != "not inside tmux: open a shell there with: cd "+wt {
		t.Errorf("! outside tmux: %q", msg)
	}
	// Inside tmux (a private server, top's pane %0): a pane split from top's, in the worktree.
	sock := filepath.Join(l.tmuxDir, "topshell")
	if out, err := l.output("tmux", "-S", sock, "new-session", "-d", "-s", "top", "-x", "100", "-y", "30", "sh"); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	defer l.output("tmux", "-S", sock, "kill-server")
	env := append(append([]string{}, l.env...), "TMUX="+sock+",1,0", "TMUX_PANE=%0", "SHELL=/bin/sh")
	d = ui.NewDriver(context.Background(), m, ui.Options{Environ: env})
	d.Select("w1")
	d.Key("!")
	if msg := d.Message(); !strings.HasPrefix(msg, "w1: shell in "+wt) {
		t.Errorf("! inside tmux: %q", msg)
	}
	l.waitFor("a pane in the worktree", func() bool {
		out, _ := l.output("tmux", "-S", sock, "list-panes", "-t", "top", "-F", "#{pane_current_path}")
		return strings.Count(string(out), "\n") == 2 && strings.Contains(string(out), wt+"\n")
	})

	// s: a line typed into w1, as swarm send does.
	d.Select("w1")
	d.Key("s")
	d.Type("say from-top")
	d.Key("enter")
	if msg := d.Message(); msg != "w1: sent" {
		t.Errorf("s: %q", msg)
	}
	l.waitFor("w1 says from-top", func() bool { return strings.Contains(l.swarm("peek", "w1"), "agent says: from-top") })

	// n: a new worker like w1 (its command, its tmux server, a worktree beside its own on a
	// branch of its name), its prompt typed once it is ready.
	d.Select("w1")
	d.Key("n")
	d.Type("w2 say hello-w2")
	d.Key("enter")
	if msg := d.Message(); msg != "started w2 (like w1)" {
		t.Fatalf("n: %q", msg)
	}
	l.waitFor("w2 says hello-w2", func() bool { return strings.Contains(l.swarm("peek", "w2"), "agent says: hello-w2") })
	st := l.swarm("status", "w2", "--json")
	w2 := filepath.Join(filepath.Dir(wt), "w2")
	if !strings.Contains(st, `"path": "`+w2+`"`) || !strings.Contains(st, `"branch": "w2"`) || !strings.Contains(st, `"socket": "acts"`) {
		t.Errorf("w2 is not like w1 (worktree %s, branch w2, tmux socket acts):\n%s", w2, st)
	}

	// x: stopped after a yes, as swarm kill stops it.
	d.Refresh()
	d.Select("w2")
	d.Key("x")
	d.Key("y")
	if msg := d.Message(); msg != "w2: kill" {
		t.Errorf("x: %q", msg)
	}
	if out, err := l.output(filepath.Join(binDir, "swarm"), "status", "w2"); err == nil || !strings.Contains(string(out), "w2: stopped") {
		t.Errorf("w2 after x: %s (%v)", out, err)
	}
}
