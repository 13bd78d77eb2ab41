package ui_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/top"
)

// A supervisor that never answers its control socket (a stand-in listener that accepts and
// says nothing) does not delay another agent's row: the other worker's end shows within 1 s of
// its record, and the hung worker's row keeps its status and says its screen is not answering.
func TestUIHungSupervisor(t *testing.T) {
	l := newLab(t)
	l.swarm("spawn", "--name", "hung", "--", "sh", "-c", "echo hung-ready; exec cat")
	l.swarm("spawn", "--name", "other", "--", "sh", "-c", "echo other-ready; exec cat")
	e, err := supervise.Layout{Dir: filepath.Join(l.swarmDir, "supervise")}.ReadEntry("hung")
	if err != nil || e == nil || e.Control == "" {
		t.Fatalf("hung's supervisor entry: %+v, %v", e, err)
	}
	testenv.HungSocket(t, e.Control)

	l.tmux("new-session", "-d", "-s", "ui", "-x", "100", "-y", "24", "PS1='shell$ ' exec sh")
	l.tmux("set", "-g", "window-size", "manual")
	l.seen("the shell's prompt", func(s string) bool { return strings.Contains(s, "shell$") })
	l.keys("swarm top", "Enter")
	l.seen("both rows, the hung one marked", func(s string) bool {
		return rowShows(top.KindWorker, "other", "running", "other-ready")(s) &&
			rowShows(top.KindWorker, "hung", "running", "[screen not answering]")(s)
	})

	ch := l.watch(l.workerEnded("other"))
	l.swarm("kill", "other")
	l.shownWithin("the other worker's end", ch, rowShows(top.KindWorker, "other", "stopped"))
	if s := l.capture(); !rowShows(top.KindWorker, "hung", "running", "[screen not answering]")(s) {
		t.Errorf("the hung worker's row after:\n%s", s)
	}
}
