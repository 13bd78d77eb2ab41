package ui_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/top"
)

// The real UI in tmux: `swarm top` (the binary, built once) runs in an 80×24 pane of a private
// tmux server, over real workers and a swarm loop (scripted sh agents) in a private $SWARM_DIR;
// the test types with send-keys and reads the pane with capture-pane, and checks each action's
// effect apart from the UI, with package top's model.

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "topui-bin")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if _, err := exec.LookPath("go"); err == nil {
			if _, err := exec.LookPath("tmux"); err == nil {
				out, err := exec.Command("go", "build", "-o", dir, "github.com/agentfleet/fleet/cmd/swarm").CombinedOutput()
				if err != nil {
					fmt.Fprintf(os.Stderr, "building swarm: %v\n%s", err, out)
					return 1
				}
				binDir = dir
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// bound is how long a change may take to show before the test gives up: generous, the machine
// is shared. The 1 s the issue asks for is measured and logged (see seen).
const bound = 20 * time.Second

type lab struct {
	t        *testing.T
	env      []string
	ws       string
	swarmDir string
	sock     string // the tmux server the UI runs in
	tmuxDir  string // the agents' tmux servers (TMUX_TMPDIR)
}

func newLab(t *testing.T) *lab {
	t.Helper()
	if testing.Short() || binDir == "" {
		t.Skip("needs go, tmux and real agents")
	}
	// tmux socket paths must be short: not under t.TempDir's deep path.
	tmuxDir, err := os.MkdirTemp("", "topui")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	l := &lab{t: t, ws: filepath.Join(root, "ws"), swarmDir: filepath.Join(root, "swarm"), tmuxDir: tmuxDir,
		sock: filepath.Join(tmuxDir, "ui")}
	os.MkdirAll(l.ws, 0o700)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "NO_COLOR=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	l.env = append(env, "SWARM_DIR="+l.swarmDir, "TMUX_TMPDIR="+tmuxDir, "STATE_DIR="+filepath.Join(l.ws, "state"),
		"PATH="+binDir+":"+os.Getenv("PATH"), "PS1=shell$ ", "ENV=", "TERM=xterm-256color")
	t.Cleanup(func() {
		l.swarm("kill", "--all")
		l.tmux("kill-server")
		socks, _ := filepath.Glob(filepath.Join(tmuxDir, "tmux-*", "*"))
		for _, s := range socks {
			exec.Command("tmux", "-S", s, "kill-server").Run()
		}
		os.RemoveAll(tmuxDir)
	})
	return l
}

func (l *lab) swarm(args ...string) string {
	c := exec.Command(filepath.Join(binDir, "swarm"), args...)
	c.Env, c.Dir = l.env, l.ws
	out, err := c.CombinedOutput()
	if err != nil && args[0] != "kill" {
		l.t.Fatalf("swarm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// tmux runs a command on the UI's tmux server.
func (l *lab) tmux(args ...string) string {
	c := exec.Command("tmux", append([]string{"-S", l.sock}, args...)...)
	c.Env, c.Dir = l.env, l.ws
	out, err := c.CombinedOutput()
	if err != nil && args[0] != "kill-server" {
		l.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (l *lab) keys(keys ...string) { l.tmux(append([]string{"send-keys", "-t", "ui"}, keys...)...) }

func (l *lab) capture() string { return l.tmux("capture-pane", "-p", "-t", "ui") }

// seen polls the pane until ok holds (at most bound) and returns how long it took.
func (l *lab) seen(what string, ok func(screen string) bool) time.Duration {
	l.t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < bound {
		last = l.capture()
		if ok(last) {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.t.Fatalf("%s: not on the screen within %v; the pane:\n%s", what, bound, last)
	return 0
}

// clearFilter opens the filter prompt and leaves it with Escape, which clears it; it waits for
// each to show (an Escape followed at once by another key reads as Alt and that key).
func (l *lab) clearFilter() {
	l.t.Helper()
	l.keys("/")
	l.seen("the filter prompt", func(s string) bool { return strings.Contains(s, "filter> ") })
	l.keys("Escape")
	l.seen("the filter cleared", func(s string) bool { return strings.Contains(s, "agents  sort=") })
}

// line is the pane's line that holds the row of name (the NAME column), "" if none.
func line(screen string, kind top.Kind, name string) string {
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[0] == string(kind) && f[1] == name {
			return l
		}
	}
	return ""
}

func rowShows(kind top.Kind, name string, words ...string) func(string) bool {
	return func(s string) bool {
		l := line(s, kind, name)
		if l == "" {
			return false
		}
		for _, w := range words {
			if !strings.Contains(l, w) {
				return false
			}
		}
		return true
	}
}

// row is the model's row now (independent of the UI).
func (l *lab) row(kind top.Kind, name string) *top.Row {
	m, err := top.Open(top.Sources{SwarmDir: l.swarmDir, StateDir: filepath.Join(l.ws, "state"), Workspace: l.ws})
	if err != nil {
		l.t.Fatal(err)
	}
	rows, _ := m.Refresh(context.Background())
	for _, r := range rows {
		if r.Kind == kind && r.Name == name {
			return r
		}
	}
	return nil
}

// waitModel waits until the model's row satisfies ok (at most bound).
func (l *lab) waitModel(what string, kind top.Kind, name string, ok func(*top.Row) bool) {
	l.t.Helper()
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if r := l.row(kind, name); r != nil && ok(r) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	l.t.Fatalf("%s: the model's %s row %s is not as wanted within %v: %+v", what, kind, name, bound, l.row(kind, name))
}

// terminal is the pane's alternate_on and cursor_flag: "0 1" on the shell's normal screen.
func (l *lab) terminal() string {
	return strings.TrimSpace(l.tmux("display", "-p", "-t", "ui", "#{alternate_on} #{cursor_flag}"))
}

// topPID is the pid of the shell's child (swarm top) in the pane.
func (l *lab) topPID() int {
	shell := strings.TrimSpace(l.tmux("display", "-p", "-t", "ui", "#{pane_pid}"))
	b, err := os.ReadFile(filepath.Join("/proc", shell, "task", shell, "children"))
	if err != nil {
		l.t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		l.t.Fatalf("the pane's shell has children %q, want swarm top alone", f)
	}
	pid, _ := strconv.Atoi(f[0])
	return pid
}

// restored waits until the pane is back on the shell's normal screen: alternate screen left,
// cursor shown, the shell's prompt on it.
func (l *lab) restored(how string) {
	l.t.Helper()
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if l.terminal() == "0 1" && strings.Contains(l.capture(), "shell$") && !strings.Contains(l.capture(), "KIND") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.t.Fatalf("after %s the terminal is not restored: alternate_on, cursor_flag = %q; the pane:\n%s", how, l.terminal(), l.capture())
}

func TestUIInTmux(t *testing.T) {
	l := newLab(t)
	l.swarm("spawn", "--name", "live", "--", "sh", "-c", "echo ready; exec cat")
	prompt := filepath.Join(l.ws, "PROMPT.md")
	os.WriteFile(prompt, []byte("do it\n"), 0o600)
	l.swarm("ralph", "spawn", "--name", "lp", "--prompt-file", prompt, "--max-iterations", "3", "--no-worktree",
		"--inactivity-timeout", "0", "--", "sh", "-c", "echo loop-agent; exec cat")
	t.Cleanup(func() { l.swarm("kill", "lp") })

	l.tmux("new-session", "-d", "-s", "ui", "-x", "80", "-y", "24", "PS1='shell$ ' exec sh")
	l.tmux("set", "-g", "window-size", "manual")
	l.seen("the shell's prompt", func(s string) bool { return strings.Contains(s, "shell$") })
	if got := l.terminal(); got != "0 1" {
		t.Fatalf("before swarm top: alternate_on, cursor_flag = %q", got)
	}
	l.keys("swarm top", "Enter")

	// The rows appear.
	l.seen("the worker's and the loop's rows", func(s string) bool {
		return rowShows(top.KindWorker, "live", "running", "ready")(s) && rowShows(top.KindLoop, "lp", "running", "1/3")(s)
	})
	if got := l.terminal(); !strings.HasPrefix(got, "1 ") {
		t.Errorf("swarm top runs, but alternate_on = %q", got)
	}
	if s := l.capture(); len(strings.Split(strings.TrimRight(s, "\n"), "\n")) > 24 || !strings.Contains(s, "2 agents") {
		t.Errorf("the 80×24 screen:\n%s", s)
	}

	// A row that appears later shows at the next refresh.
	l.swarm("spawn", "--name", "late", "--", "sh", "-c", "echo late-agent; read x; exit 4")
	t.Logf("a new worker's row showed %v after swarm spawn returned",
		l.seen("the new worker's row", rowShows(top.KindWorker, "late", "running", "late-agent")))
	// An agent that ends changes its row.
	start := time.Now()
	l.swarm("send", "late", "bye")
	sent := time.Since(start)
	t.Logf("an ended worker's row changed %v after swarm send returned (it took %v)",
		l.seen("the ended worker's row", func(s string) bool {
			f := strings.Fields(line(s, top.KindWorker, "late"))
			return len(f) > 3 && f[2] == "stopped" && f[len(f)-1] == "4"
		}), sent)

	// Select the live worker with the text filter.
	l.keys("/")
	l.keys("-l", "live")
	l.keys("Enter")
	l.seen("the filter", func(s string) bool { return strings.Contains(s, "1 agents") && line(s, top.KindWorker, "live") != "" })

	// s: the agent receives the line.
	l.keys("s")
	l.seen("the send prompt", func(s string) bool { return strings.Contains(s, "send> _") })
	l.keys("-l", "hello from top")
	l.keys("Enter")
	l.waitModel("send", top.KindWorker, "live", func(r *top.Row) bool { return r.LastLine == "hello from top" })
	l.seen("the sent line in LAST", rowShows(top.KindWorker, "live", "hello from top"))

	// x: nothing before the confirmation; n cancels; y kills.
	l.keys("x")
	l.seen("the kill confirmation", func(s string) bool { return strings.Contains(s, "kill worker live? (y/N)") })
	if r := l.row(top.KindWorker, "live"); r == nil || !r.Live {
		t.Fatalf("the worker is not live while the kill is asked: %+v", r)
	}
	l.keys("n")
	l.seen("cancelled", func(s string) bool { return strings.Contains(s, "cancelled") })
	if r := l.row(top.KindWorker, "live"); r == nil || !r.Live {
		t.Fatalf("the worker is not live after the kill was cancelled: %+v", r)
	}
	l.keys("x")
	l.seen("the kill confirmation", func(s string) bool { return strings.Contains(s, "kill worker live? (y/N)") })
	l.keys("y")
	l.waitModel("kill", top.KindWorker, "live", func(r *top.Row) bool { return !r.Live && strings.Contains(r.ExitWords(), "killed") })
	l.seen("the killed worker's row", rowShows(top.KindWorker, "live", "stopped", "killed"))

	// p: the loop pauses (after its iteration, as ralph pause); r resumes it.
	l.clearFilter()
	l.keys("/")
	l.keys("-l", "lp")
	l.keys("Enter")
	l.seen("the loop alone", func(s string) bool { return strings.Contains(s, "1 agents") && line(s, top.KindLoop, "lp") != "" })
	l.keys("p")
	l.waitModel("pause", top.KindLoop, "lp", func(r *top.Row) bool { return r.Status == "paused" })
	l.seen("the paused loop's row", rowShows(top.KindLoop, "lp", "paused"))
	l.keys("r")
	l.waitModel("resume", top.KindLoop, "lp", func(r *top.Row) bool { return r.Status == "running" })
	l.seen("the resumed loop's row", rowShows(top.KindLoop, "lp", "running"))

	// Resizing redraws: the footer moves to the new last line, the header fills the width.
	l.clearFilter()
	l.tmux("resize-window", "-t", "ui", "-x", "120", "-y", "30")
	l.seen("the redraw at 120×30", func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return len(lines) == 30 && strings.Contains(lines[28], "agents") && strings.Contains(lines[29], "enter screen")
	})
	l.tmux("resize-window", "-t", "ui", "-x", "80", "-y", "24")
	l.seen("the redraw at 80×24", func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return len(lines) == 24 && strings.Contains(lines[22], "agents") && strings.Contains(lines[23], "enter screen")
	})

	// q quits and restores the terminal.
	l.keys("q")
	l.restored("q")

	// SIGTERM to swarm top restores it too.
	l.keys("swarm top", "Enter")
	l.seen("swarm top again", rowShows(top.KindLoop, "lp", "running"))
	if err := syscall.Kill(l.topPID(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	l.restored("SIGTERM")
}
