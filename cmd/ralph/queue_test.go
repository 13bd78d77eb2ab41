package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestQueueScripts runs testdata/queue-*.txtar: ralph queue against real processes, a real git
// repository and the scripted agent testdata/queue-agent.sh.
func TestQueueScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/queue-*.txtar")
	testscript.Run(t, testscript.Params{
		Files: files,
		Setup: queueEnv,
		Cmds:  queueCmds,
	})
}

// queueEnv gives every script a git repository at $WORK/repo (the queue's .claude/ralph is in
// it), a state directory $WORK/state, the scripted agent as agent "fake" (CONFIG_FILE), and
// RALPH_QUEUE_VALIDATE=1: every queue file is checked against its schema before each write. Any
// supervisor still registered at the end is killed.
func queueEnv(env *testscript.Env) error {
	agent, err := filepath.Abs("testdata/queue-agent.sh")
	if err != nil {
		return err
	}
	repo := filepath.Join(env.WorkDir, "repo")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "config", "user.email", "t@example.com"},
		{"-C", repo, "config", "user.name", "t"}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	config := filepath.Join(env.WorkDir, "agents.json")
	cfg := map[string]any{
		"fake": map[string]any{"command": agent, "terminal": false, "default_model": "m1"},
	}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(config, b, 0o600); err != nil {
		return err
	}
	stateDir := filepath.Join(env.WorkDir, "state")
	env.Setenv("CONFIG_FILE", config)
	env.Setenv("STATE_DIR", stateDir)
	env.Setenv("RALPH_QUEUE_VALIDATE", "1")
	env.Setenv("HOME", env.WorkDir)
	env.Setenv("TMUX_TMPDIR", env.WorkDir)
	env.Cd = repo
	env.Defer(func() { killSupervisors(stateDir) })
	return nil
}

// killSupervisors kills every supervisor still registered in stateDir (a failed script's).
func killSupervisors(stateDir string) {
	layout := supervise.Layout{Dir: stateDir}
	for _, name := range layout.Registered(func(string) bool { return true }) {
		if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
			syscall.Kill(e.PID, syscall.SIGKILL)
		}
	}
}

var queueCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	// validqueue: every file of .claude/ralph/ validates against its kind's embedded schema.
	"validqueue": func(ts *testscript.TestScript, neg bool, args []string) {
		dir := store.In(ts.MkAbs("."))
		names, _ := filepath.Glob(filepath.Join(dir.Root, "*.json"))
		if len(names) == 0 {
			ts.Fatalf("no queue files in %s", dir.Root)
		}
		for _, name := range names {
			if err := validQueueFile(name); err != nil {
				ts.Fatalf("%v", err)
			}
		}
	},
}

// validQueueFile validates one file of .claude/ralph by the kind its name says.
func validQueueFile(name string) error {
	base := filepath.Base(name)
	kind := ""
	for _, k := range []string{store.KindTaskQueue, store.KindRetryQueue, store.KindProgress, store.KindAgentState} {
		if strings.HasPrefix(base, k+"-") {
			kind = k
		}
	}
	if kind == "" {
		return fmt.Errorf("%s: not a queue file", name)
	}
	doc, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	if err := store.Check(kind, doc); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	return nil
}
