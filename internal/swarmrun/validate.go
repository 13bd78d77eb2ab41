package swarmrun

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/agentfleet/fleet/internal/manifest"
	"github.com/agentfleet/fleet/internal/statedir"
)

// ExecutionIDPattern is what an execution id is: the day, the manifest's slug (runs of
// lower-case letters and digits joined by single dashes, as manifest.Slug makes it) and four hex
// digits. The execution schema's execution_id has this pattern (TestExecutionIDPatternIsTheSchemas).
const ExecutionIDPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}-[a-z0-9]+(-[a-z0-9]+)*-[0-9a-f]{4}$`

var executionIDRE = regexp.MustCompile(ExecutionIDPattern)

// maxExecutionID bounds an execution id: the day (10), a slug of at most 41 and the hex (5),
// with room to spare; the bead <execution>-<task> is a file name.
const maxExecutionID = 64

// shaRE is a commit id, full or abbreviated (the seed's example has 12 digits).
var shaRE = regexp.MustCompile(`^[0-9a-f]{4,64}$`)

// CheckExecutionID returns an error unless id is an execution id (ExecutionIDPattern).
func CheckExecutionID(id string) error {
	if len(id) > maxExecutionID || !executionIDRE.MatchString(id) {
		return fmt.Errorf("execution id %q is not YYYY-MM-DD-<slug>-<4 hex>", id)
	}
	return nil
}

// validate checks what a state read back from a file will be used for before any of it is:
// the execution id (it names the history file), every task id (beads, worktree paths) and
// branch (git arguments), the dependencies and the order naming tasks that exist, the commits
// given to git. A state that fails is not acted on: an agent or a planted file could have
// written it. A state without task_order (the seed's tool wrote none) gets its task ids, sorted.
func (s *State) validate() error {
	if err := CheckExecutionID(s.ExecutionID); err != nil {
		return err
	}
	if err := checkBranch(s.BaseBranch); err != nil {
		return fmt.Errorf("base_branch %q %v", s.BaseBranch, err)
	}
	for id, t := range s.Tasks {
		if err := s.validateTask(id, t); err != nil {
			return err
		}
	}
	if len(s.Order) == 0 {
		s.Order = slices.Sorted(maps.Keys(s.Tasks))
	}
	seen := map[string]bool{}
	for _, id := range s.Order {
		if s.Tasks[id] == nil || seen[id] {
			return fmt.Errorf("task_order names %q, which is no task or is named twice", id)
		}
		seen[id] = true
	}
	if len(seen) != len(s.Tasks) {
		return fmt.Errorf("task_order names %d of the %d tasks", len(seen), len(s.Tasks))
	}
	for _, b := range s.BranchesMade {
		if err := manifest.CheckBranch(b); err != nil || b == "" {
			return fmt.Errorf("branches_made holds %q, which is not a branch name", b)
		}
	}
	for id, a := range s.Agents {
		if a == nil {
			return fmt.Errorf("agent %q is null", id)
		}
	}
	return nil
}

// checkBranch is manifest.CheckBranch, allowing none: the schema does not require one (the seed's
// minimal state has none), and an execution resumed without one is refused as changed.
func checkBranch(b string) error {
	if b == "" {
		return nil
	}
	return manifest.CheckBranch(b)
}

// validateTask checks one task of the state, keyed id.
func (s *State) validateTask(id string, t *Task) error {
	if t == nil {
		return fmt.Errorf("task %q is null", id)
	}
	// A task id as CheckName names it (the manifest's rule: no dots).
	if err := statedir.CheckName(statedir.Kind("task id"), id); err != nil {
		return err
	}
	if t.ID != id {
		return fmt.Errorf("task %q has the id %q", id, t.ID)
	}
	if err := checkBranch(t.Branch); err != nil {
		return fmt.Errorf("task %q: branch %q %v", id, t.Branch, err)
	}
	for _, d := range t.DependsOn {
		if s.Tasks[d] == nil {
			return fmt.Errorf("task %q depends on %q, which is no task", id, d)
		}
	}
	// A task without a trace has nothing more to check.
	tr := valueOr(t.Trace, Trace{})
	for _, sha := range []*string{&tr.BaseSHA, tr.CommitSHA} {
		if sha != nil && *sha != "" && !shaRE.MatchString(*sha) {
			return fmt.Errorf("task %q: %q is not a commit id", id, *sha)
		}
	}
	if tr.Bead != "" && tr.Bead != s.ExecutionID+"-"+id {
		return fmt.Errorf("task %q: bead %q is not %s-%s", id, tr.Bead, s.ExecutionID, id)
	}
	// The task's own worktree, or a slot's it ran in (slotTrees).
	if name := filepath.Base(tr.Worktree); tr.Worktree != "" && (!filepath.IsAbs(tr.Worktree) || name != id && !slotWorktreeRE.MatchString(name) || filepath.Base(filepath.Dir(tr.Worktree)) != "worktrees") {
		return fmt.Errorf("task %q: worktree %q is neither .swarm/worktrees/%s nor a slot's", id, tr.Worktree, id)
	}
	return nil
}
