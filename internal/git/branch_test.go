package git

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestReturnToBranch: an agent that switched to a branch of its own (git switch -c other) and
// committed there has its commits brought onto the task's branch, the worktree back on it; one
// that switched to a branch not descending from the task's (an orphan) is a *StrayError naming
// both, nothing moved (issue 27, 7).
func TestReturnToBranch(t *testing.T) {
	r := newRepo(t)
	ctx := context.Background()
	base := run(t, r.Dir, "rev-parse", "HEAD")
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := r.PrepareWorktree(ctx, wt, "task", MergeSpec{Base: base}); err != nil {
		t.Fatal(err)
	}
	w := Repo{Dir: wt}
	if from, err := w.ReturnToBranch(ctx, "task"); from != "" || err != nil {
		t.Fatalf("ReturnToBranch on the task's branch = %q, %v", from, err)
	}

	run(t, wt, "switch", "-q", "-c", "other")
	commitFile(t, wt, "work.txt", "work\n", "the agent's work")
	work := run(t, wt, "rev-parse", "HEAD")
	from, err := w.ReturnToBranch(ctx, "task")
	if from != "branch other" || err != nil {
		t.Fatalf("ReturnToBranch after switch -c other = %q, %v", from, err)
	}
	if got := run(t, r.Dir, "rev-parse", "refs/heads/task"); got != work {
		t.Errorf("refs/heads/task = %s, want the agent's commit %s", got, work)
	}
	if got := run(t, wt, "symbolic-ref", "HEAD"); got != "refs/heads/task" {
		t.Errorf("the worktree's HEAD = %s, want refs/heads/task", got)
	}
	if st := run(t, wt, "status", "--porcelain"); st != "" {
		t.Errorf("the worktree is not clean after the return:\n%s", st)
	}

	run(t, wt, "switch", "-q", "--orphan", "stray")
	commitFile(t, wt, "stray.txt", "stray\n", "unrelated")
	_, err = w.ReturnToBranch(ctx, "task")
	var stray *StrayError
	if !errors.As(err, &stray) || !strings.Contains(err.Error(), "branch stray") || !strings.Contains(err.Error(), "task") {
		t.Fatalf("ReturnToBranch after switch --orphan = %v, want a StrayError naming both branches", err)
	}
	if got := run(t, r.Dir, "rev-parse", "refs/heads/task"); got != work {
		t.Errorf("refs/heads/task moved to %s on a stray HEAD", got)
	}
}
