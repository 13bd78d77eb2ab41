package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Seed 004 updates an agent's state file "at checkpoints (pre/post tool use)". Claude Code
// tells of each tool use through its own hooks (PreToolUse, PostToolUse): each claude attempt
// is given a settings file (--settings) whose hooks run CheckpointVerb, which stamps the
// agent's state file. The settings file is the runner's, written in the state directory, not
// in the agent's working tree, and what the hook writes is the agent state's last_checkpoint
// and notes alone: no task's state is decided by it, so an agent running the hook command with
// words of its own decides nothing either.

// CheckpointVerb is the hidden verb of `ralph queue` that a tool-use hook runs.
const CheckpointVerb = "__checkpoint"

// Hook events the settings file configures.
const (
	PreToolUse  = "PreToolUse"
	PostToolUse = "PostToolUse"
)

// withHookSettings writes the settings file of a claude agent's attempt n of task (bead), whose
// hooks run the checkpoint verb (Config.Checkpoint), and adds it to the agent's command line
// argv unless that names settings of its own. Other agents, or a run without the verb, get
// argv as it is. The file is made afresh for each attempt (atomically, never through a link).
func (r *runner) withHookSettings(argv []string, agentID, task, bead string, n int) ([]string, error) {
	if r.cfg.Profile.Name != "claude" || len(r.cfg.Checkpoint) == 0 {
		return argv, nil
	}
	hooks := map[string]any{}
	for _, event := range []string{PreToolUse, PostToolUse} {
		hook := append(append([]string{}, r.cfg.Checkpoint...), "--repo", r.cfg.Repo, r.plan, agentID, task, strconv.Itoa(n), event)
		hooks[event] = []any{map[string]any{"matcher": "*",
			"hooks": []any{map[string]any{"type": "command", "command": shellWords(hook)}}}}
	}
	b, _ := json.MarshalIndent(map[string]any{"hooks": hooks}, "", "  ") // strings only: no error
	path := filepath.Join(r.cfg.StateDir, "queue-hooks", bead+".settings.json")
	err := statedir.MkdirFor(path)
	if err == nil {
		err = fsx.WriteFileAtomic(path, append(b, '\n'), 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("writing the attempt's hook settings: %w", err)
	}
	if slices.ContainsFunc(argv, func(a string) bool { return a == "--settings" || strings.HasPrefix(a, "--settings=") }) {
		return argv, nil
	}
	return append(append([]string{}, argv...), "--settings", path), nil
}

// shellWords is argv as one shell command (Claude Code runs a hook's command with a shell):
// each word single-quoted.
func shellWords(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(words, " ")
}

// maxHookInput bounds what is read of a hook's input (Claude Code's JSON: the tool's name and
// input; a large input is cut, and only the name is wanted).
const maxHookInput = 1 << 20

var (
	agentIDRe  = regexp.MustCompile(`^agent-[0-9]{1,6}$`)
	toolNameRe = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,100}$`)
)

// Checkpoint is the checkpoint verb: agentID's state file in repo's queue directory, when it
// still names attempt n of task of plan at work, gets last_checkpoint now and a note of the
// tool use (the tool's name read from the hook's input on in). A state that names another
// attempt, or none, is left alone: the hook of an attempt that ended, or one an agent ran by
// hand, changes nothing. Bad words are an error; the caller never fails the tool for it.
func Checkpoint(ctx context.Context, repo, planID, agentID, task string, n int, event string, in io.Reader) error {
	if err := statedir.CheckName(statedir.KindBead, plan.Bead(planID, task)); err != nil {
		return fmt.Errorf("plan %q, task %q: %w", planID, task, err)
	}
	if !agentIDRe.MatchString(agentID) || n < 1 || (event != PreToolUse && event != PostToolUse) {
		return fmt.Errorf("agent %q, attempt %d, event %q: not a checkpoint of ralph queue's hooks", agentID, n, event)
	}
	s := store.New(store.In(repo), planID)
	st, err := s.ReadAgentState(agentID)
	if err != nil || st == nil {
		return err
	}
	if st.PlanID != planID || st.TaskID == nil || *st.TaskID != task || st.Attempt != n || st.Status != store.AgentWorking {
		return nil
	}
	var input struct {
		ToolName string `json:"tool_name"`
	}
	b, _ := io.ReadAll(io.LimitReader(in, maxHookInput))
	json.Unmarshal(b, &input)
	note := fmt.Sprintf("%s attempt %d: %s", task, n, event)
	if toolNameRe.MatchString(input.ToolName) {
		note += " " + input.ToolName
	}
	st.LastCheckpoint, st.Context.Notes = now(), note
	return s.WriteAgentState(ctx, st)
}
