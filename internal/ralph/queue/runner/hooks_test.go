package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
)

// checkpointMain is the checkpoint verb as ralph's (queue __checkpoint --repo DIR PLAN AGENT
// TASK ATTEMPT EVENT), run by the stand-in claude's hooks.
func checkpointMain(args []string) int {
	if len(args) != 7 || args[0] != "--repo" {
		fmt.Fprintf(os.Stderr, "checkpoint: bad arguments %q\n", args)
		return 0
	}
	n, _ := strconv.Atoi(args[5])
	if err := Checkpoint(context.Background(), args[1], args[2], args[3], args[4], n, args[6], os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "checkpoint: %v\n", err)
	}
	return 0
}

// TestToolUseCheckpoints: a claude agent's attempt gets a settings file, outside its working
// tree, whose PreToolUse and PostToolUse hooks stamp its state file (seed 004: "updated at
// checkpoints (pre/post tool use)"): last_checkpoint and a note of the tool; the task's state
// is not the hook's to change.
func TestToolUseCheckpoints(t *testing.T) {
	w := newWorld(t, "t1: use tools")
	claudeSh, _ := filepath.Abs("testdata/claude.sh")
	cfg, err := agent.Parse(fmt.Appendf(nil, `{"claude": {"command": %q, "terminal": false}}`, claudeSh))
	if err != nil {
		t.Fatal(err)
	}
	if w.profile, err = cfg.Lookup("claude"); err != nil {
		t.Fatal(err)
	}
	signals := t.TempDir()
	log := newLogWatch()
	rc := w.config(1, 1, log)
	rc.AgentName = "claude"
	rc.Checkpoint = []string{os.Args[0], CheckpointVerb}
	rc.Env = append(rc.Env, "HOOKTEST="+signals)
	done := make(chan error, 1)
	go func() {
		_, err := w.runE(context.Background(), rc)
		done <- err
	}()
	state := func(step string) *store.AgentState {
		t.Helper()
		waitUntil(t, step, func() bool { _, err := os.Stat(filepath.Join(signals, step)); return err == nil })
		a, err := w.store.ReadAgentState(AgentID(1))
		if err != nil || a == nil {
			t.Fatalf("agent-1's state after %s: %v, %v", step, a, err)
		}
		return a
	}
	a := state("pre")
	if a.Status != store.AgentWorking || a.TaskID == nil || *a.TaskID != "t1" || a.Context.Notes != "t1 attempt 1: PreToolUse Bash" {
		t.Errorf("agent-1 after PreToolUse: %+v, want working on t1, noted", a)
	}
	first := a.LastCheckpoint
	os.WriteFile(filepath.Join(signals, "go"), nil, 0o600)
	if a = state("post"); a.Context.Notes != "t1 attempt 1: PostToolUse Edit" || a.LastCheckpoint < first {
		t.Errorf("agent-1 after PostToolUse: %+v (checkpoint %s before)", a, first)
	}
	if task := w.task("t1"); task.Status != store.Claimed {
		t.Errorf("t1 while its agent works: %s, want claimed", task.Status)
	}
	os.WriteFile(filepath.Join(signals, "end"), nil, 0o600)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v\n%s", err, log)
	}
	if task := w.task("t1"); task.Status != store.Done {
		t.Errorf("t1: %s, want done\n%s", task.Status, log)
	}
	// The settings are the runner's, in the state directory: not in the tree the agent works in.
	settings := filepath.Join(w.stateDir, "queue-hooks", "p-t1.settings.json")
	b, err := os.ReadFile(settings)
	if err != nil || !strings.Contains(string(b), `"PreToolUse"`) || !strings.Contains(string(b), `"PostToolUse"`) {
		t.Errorf("%s: %v\n%s", settings, err, b)
	}
	w.valid()
}

// TestCheckpointOnlyStampsItsAttempt: the checkpoint of an attempt that is not the one the
// agent's state names (an ended one, or words an agent made up) changes nothing, and bad
// words are refused.
func TestCheckpointOnlyStampsItsAttempt(t *testing.T) {
	w := newWorld(t, "t1: a task")
	task := "t1"
	st := &store.AgentState{AgentID: "agent-1", PlanID: "p", TaskID: &task, Status: store.AgentWorking, Attempt: 2,
		LastCheckpoint: "2026-01-01T00:00:00Z", Context: store.AgentContext{Notes: "before"}}
	if err := w.store.WriteAgentState(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, words := range [][]string{{"p", "agent-1", "t1", "1"}, {"p", "agent-1", "t2", "2"}, {"q", "agent-1", "t1", "2"}} {
		n, _ := strconv.Atoi(words[3])
		if err := Checkpoint(ctx, w.repo, words[0], words[1], words[2], n, PreToolUse, strings.NewReader(`{"tool_name":"Bash"}`)); err != nil {
			t.Errorf("Checkpoint(%v) = %v", words, err)
		}
	}
	for _, words := range [][]string{{"p", "../x", "t1", "2", PreToolUse}, {"p/..", "agent-1", "t1", "2", PreToolUse}, {"p", "agent-1", "t1", "2", "Stop"}} {
		n, _ := strconv.Atoi(words[3])
		if err := Checkpoint(ctx, w.repo, words[0], words[1], words[2], n, words[4], strings.NewReader("{}")); err == nil {
			t.Errorf("Checkpoint(%v) = nil, want an error", words)
		}
	}
	if a, _ := w.store.ReadAgentState("agent-1"); a.LastCheckpoint != st.LastCheckpoint || a.Context.Notes != "before" {
		t.Errorf("agent-1's state: %+v, want it unchanged", a)
	}
	// Its own attempt's checkpoint stamps it; a tool name that is no name is left out.
	if err := Checkpoint(ctx, w.repo, "p", "agent-1", "t1", 2, PostToolUse, strings.NewReader(`{"tool_name":"a b\n"}`)); err != nil {
		t.Fatal(err)
	}
	if a, _ := w.store.ReadAgentState("agent-1"); a.LastCheckpoint == st.LastCheckpoint || a.Context.Notes != "t1 attempt 2: PostToolUse" {
		t.Errorf("agent-1's state: %+v, want stamped", a)
	}
}
