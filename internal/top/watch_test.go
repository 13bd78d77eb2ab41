package top_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/top"
)

// Watch tells of a change in a directory that did not exist when it started: the first
// dispatch into a new state directory, the first AIWG loop or queue of a workspace, the first
// worker of a new $SWARM_DIR. (Before, only directories there at the start, or at a later
// full refresh, were watched: such a first agent showed up to ten intervals late.)
func TestWatchSeesDirectoriesMadeLater(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(ws, stateDir, swarmDir string) string // makes the directories, returns a file to write
	}{
		{"state dir", func(ws, stateDir, _ string) string {
			os.MkdirAll(filepath.Join(stateDir, "runs"), 0o700)
			return filepath.Join(stateDir, "runs", "bd-1.json")
		}},
		{"AIWG loop", func(ws, _, _ string) string {
			d := filepath.Join(ws, ".aiwg", "ralph", "loops", "ralph-x-01234567")
			os.MkdirAll(d, 0o700)
			return filepath.Join(d, "state.json")
		}},
		{"queue", func(ws, _, _ string) string {
			os.MkdirAll(filepath.Join(ws, ".claude", "ralph"), 0o700)
			return filepath.Join(ws, ".claude", "ralph", "task-queue-p.json")
		}},
		{"swarm loop", func(_, _, swarmDir string) string {
			os.MkdirAll(filepath.Join(swarmDir, "ralph", "lp"), 0o700)
			return filepath.Join(swarmDir, "ralph", "lp", "state.json")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			ws, stateDir, swarmDir := filepath.Join(root, "ws"), filepath.Join(root, "ws", "state"), filepath.Join(root, "swarm")
			os.MkdirAll(ws, 0o700)
			os.MkdirAll(swarmDir, 0o700)
			m, err := top.Open(top.Sources{SwarmDir: swarmDir, StateDir: stateDir, Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch, rearm, err := m.Watch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The workspace is watched for the directories on the way to those top reads,
			// not for the agents' work in it.
			drain(ch, rearm)
			os.WriteFile(filepath.Join(ws, "work.txt"), []byte("x"), 0o600)
			select {
			case <-ch:
				t.Fatalf("a file written in the workspace's top was told as a change")
			case <-time.After(300 * time.Millisecond):
			}
			// Each message is followed by a rearm (as the UI's refresh does).
			file := tc.make(ws, stateDir, swarmDir)
			drain(ch, rearm)
			if err := os.WriteFile(file, []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
			select { // a message after the write: seen
			case <-ch:
			case <-time.After(5 * time.Second):
				t.Fatalf("no change told within 5s of writing %s", file)
			}
		})
	}
}

// drain takes the messages of the directories' making (rearming after each, as the UI's
// refresh does) until none comes for 200 ms.
func drain(ch <-chan struct{}, rearm func()) {
	for {
		select {
		case <-ch:
			rearm()
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}

// A $SWARM_DIR made after top started (the first `swarm spawn` on the machine): its making is
// told, and the next refresh shows its worker. (Before, a model opened without it never read
// it: its workers showed only in a new swarm top.)
func TestSwarmDirMadeLater(t *testing.T) {
	l := newLab(t)
	if _, err := os.Stat(l.swarmDir); err == nil {
		t.Fatalf("%s is there before the first spawn", l.swarmDir)
	}
	m := l.model()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, rearm, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := m.Refresh(ctx); err != nil || len(rows) != 0 {
		t.Fatalf("before the spawn: %d rows, %v", len(rows), err)
	}
	l.swarm("spawn", "--name", "first", "--", "sh", "-c", "echo ready; exec cat")
	select {
	case <-ch:
		rearm()
	case <-time.After(5 * time.Second):
		t.Fatalf("the making of %s was not told within 5s", l.swarmDir)
	}
	waitRow(t, m, top.KindWorker, "first", func(r *top.Row) bool { return r.Live && r.Status == "running" })
	// Its directory is watched now: its end is told.
	drain(ch, rearm)
	l.swarm("kill", "first")
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("the worker's end in the new %s was not told within 5s", l.swarmDir)
	}
}
