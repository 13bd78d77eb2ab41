package swarm

import (
	"slices"
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

func TestRespawnSpec(t *testing.T) {
	sock := "k"
	w := &worker.Worker{Name: "w", Cmd: []string{"claude", "--x"}, Cwd: "/d", Tags: []string{"a"},
		Env: worker.Env{{Key: "K", Value: "V=1"}}, Tmux: &worker.Tmux{Session: "s", Window: "w", Socket: &sock},
		Worktree: &worker.Worktree{Path: "/d", Branch: "w", BaseRepo: "/r"},
		Metadata: worker.Object{}.SetValue(worker.MetaProfile, "claude").SetValue(worker.MetaExitCode, 3).SetValue("ralph", true)}
	sp := RespawnSpec(w)
	switch {
	case sp.Name != "w" || !slices.Equal(sp.Cmd, w.Cmd) || sp.Dir != "/d" || !slices.Equal(sp.Tags, w.Tags):
		t.Errorf("RespawnSpec(%s) = %+v: name, command, directory or tags lost", w.Name, sp)
	case len(sp.Env) != 1 || sp.Env[0] != (worker.EnvVar{Key: "K", Value: "V=1"}):
		t.Errorf("RespawnSpec(%s).Env = %v, want K=V=1", w.Name, sp.Env)
	case sp.Tmux == nil || sp.Tmux.Session != "s" || sp.Tmux.Socket == nil || *sp.Tmux.Socket != "k":
		t.Errorf("RespawnSpec(%s).Tmux = %+v, want session s, socket k", w.Name, sp.Tmux)
	case sp.InWorktree == nil || sp.InWorktree.Path != "/d" || sp.InWorktree.Branch != "w" || sp.InWorktree.BaseRepo != "/r" || sp.Worktree != nil:
		t.Errorf("RespawnSpec(%s) worktree = %+v (new %+v), want the existing one", w.Name, sp.InWorktree, sp.Worktree)
	case sp.Profile != "claude":
		t.Errorf("RespawnSpec(%s).Profile = %q, want claude", w.Name, sp.Profile)
	case sp.Metadata.Has(worker.MetaProfile) || sp.Metadata.Has(worker.MetaExitCode) || !sp.Metadata.Has("ralph"):
		t.Errorf("RespawnSpec(%s).Metadata = %s, want ralph alone (no key of one run)", w.Name, sp.Metadata.Get("ralph"))
	}
}
