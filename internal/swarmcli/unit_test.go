package swarmcli

import (
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/worker"
)

func TestClassify(t *testing.T) {
	m, err := agent.Generic().Screen.Compile()
	if err != nil {
		t.Fatal(err)
	}
	still := time.Minute
	for _, c := range []struct {
		screen      []string
		sinceChange time.Duration
		want        string
	}{
		{[]string{"agent ready", ">"}, still, worker.ActivityIdle},
		{[]string{"agent ready", ">"}, time.Second, worker.ActivityBusy}, // output still streaming
		{[]string{"✻ Thinking… (12s · esc to interrupt)"}, still, worker.ActivityBusy},
		{[]string{"Continue? (y/n)"}, still, worker.ActivityWaiting},
		{[]string{"Continue? (y/n) y", "agent answered: y", ">"}, still, worker.ActivityIdle},
		{[]string{"Do you want to proceed?", "❯ 1. Yes", "esc to interrupt"}, still, worker.ActivityWaiting},
		// Scrolled far enough up, an old status line no longer counts.
		{append([]string{"esc to interrupt"}, strings.Split(strings.Repeat("x\n", activityTail), "\n")...), still,
			worker.ActivityIdle},
	} {
		if got := classify(m, c.screen, c.sinceChange); got != c.want {
			t.Errorf("classify(%q, %s) = %q, want %q", c.screen, c.sinceChange, got, c.want)
		}
	}
}

func TestRespawnArgs(t *testing.T) {
	sock := "k"
	w := &worker.Worker{Name: "w", Cmd: []string{"claude", "--x"}, Cwd: "/d", Tags: []string{"a"},
		Env: worker.Env{{Key: "K", Value: "V=1"}}, Tmux: &worker.Tmux{Session: "s", Window: "w", Socket: &sock},
		Metadata: worker.Object{}.SetValue(worker.MetaProfile, "claude")}
	got := strings.Join(respawnArgs(w), " ")
	want := "--name w --tmux --session s --tmux-socket k --tag a --env K=V=1 --cwd /d --profile claude -- claude --x"
	if got != want {
		t.Errorf("respawnArgs = %q, want %q", got, want)
	}
}
