package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/testenv"
)

// gitWorld is a world whose repository is a git repository on branch main with one commit.
func gitWorld(t *testing.T, tasks ...string) *world {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := newWorld(t, tasks...)
	gitIn(t, w.repo, "init", "-q", "-b", "main")
	gitIn(t, w.repo, "config", "user.name", "test")
	gitIn(t, w.repo, "config", "user.email", "test@localhost")
	// The queue's files are the runner's, not the tasks' work.
	if err := os.WriteFile(filepath.Join(w.repo, ".gitignore"), []byte(".claude/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(t, w.repo, "add", ".gitignore")
	gitIn(t, w.repo, "commit", "-q", "-m", "base")
	return w
}

// TestWorktreeHasItsDependencysCommit: with --worktree, a task's worktree starts from the base
// branch merged with its done dependencies' branches, so the dependent task sees the commit
// its dependency made (issue 19: each worktree came from the base branch alone).
func TestWorktreeHasItsDependencysCommit(t *testing.T) {
	w := gitWorld(t, "t1: make one commit:one.txt", "t2: use one check:one.txt commit:two.txt (after t1)")
	log := newLogWatch()
	cfg := w.config(2, 1, log)
	cfg.Worktree = true
	res := w.run(context.Background(), cfg)
	if res.Counts[store.Done] != 2 {
		t.Fatalf("Run = %+v, want 2 done\n%s", res.Counts, log)
	}
	for _, id := range []string{"t1", "t2"} {
		if b := w.task(id).Branch; b != "agent/p-"+id {
			t.Errorf("task %s's branch = %q, want agent/p-%s", id, b, id)
		}
	}
	t1 := gitIn(t, w.repo, "rev-parse", "agent/p-t1")
	gitIn(t, w.repo, "merge-base", "--is-ancestor", t1, "agent/p-t2")
	if got := gitIn(t, w.repo, "show", "agent/p-t2:one.txt"); got != "t1" {
		t.Errorf("agent/p-t2:one.txt = %q, want t1", got)
	}
	p, err := w.store.ViewProgress()
	if err != nil || p.BaseBranch != "main" {
		t.Errorf("progress' base_branch = %q (%v), want main", p.BaseBranch, err)
	}
	w.valid()
}

// TestWorktreeConflictBlocks: two tasks that write the same file differently, and a third
// after both: its worktree cannot merge their branches, so it is blocked, not run, its error
// naming the file, and its dependent blocked with it.
func TestWorktreeConflictBlocks(t *testing.T) {
	w := gitWorld(t, "t1: a commit:same.txt", "t2: b commit:same.txt", "t3: both (after t1, t2)", "t4: later (after t3)")
	log := newLogWatch()
	cfg := w.config(2, 3, log)
	cfg.Worktree = true
	res := w.run(context.Background(), cfg)
	if res.Counts[store.Done] != 2 || res.Counts[store.Blocked] != 2 {
		t.Fatalf("Run = %+v, want 2 done and 2 blocked\n%s", res.Counts, log)
	}
	t3 := w.task("t3")
	if t3.Status != store.Blocked || t3.Reason != store.ReasonConflict || !strings.Contains(t3.Error, "same.txt") || t3.Retries != 0 {
		t.Errorf("t3 = %+v, want blocked, reason %s, its error naming same.txt, no retry", t3, store.ReasonConflict)
	}
	if n := len(w.attempts("t3")); n != 0 {
		t.Errorf("t3 has %d attempts, want none (it never ran)", n)
	}
	if w.task("t4").Status != store.Blocked {
		t.Errorf("t4 = %+v, want blocked behind t3", w.task("t4"))
	}
	if out, _ := gitx.Run(context.Background(), w.repo, "", "rev-parse", "--verify", "-q", "refs/heads/agent/p-t3"); len(out) != 0 {
		t.Errorf("t3's branch is left after its conflict: %s", out)
	}
	w.valid()
}

// TestAgentStateContext: the agent's state file says what its last attempt did, as seed 004
// has it: the commits it made, the files it changed (committed or not, the queue's own files
// left out), and a note (issue 19: the context was always empty). The budget stops the agent
// after t1, so its state file stays. With the no-progress breaker on, the commit the context
// counts from is the one the breaker's fingerprint read (issue 16), with it off git's HEAD.
func TestAgentStateContext(t *testing.T) {
	for _, noProgress := range []int{0, 3} {
		t.Run(fmt.Sprintf("no-progress=%d", noProgress), func(t *testing.T) {
			w := gitWorld(t, "t1: work commit:one.txt touch:loose.txt cost:0.10", "t2: more")
			log := newLogWatch()
			cfg := w.config(1, 1, log)
			cfg.NoProgress = noProgress
			budget := 0.05
			cfg.Budget = &budget
			w.run(context.Background(), cfg)
			st, err := w.store.ReadAgentState("agent-1")
			if err != nil || st == nil {
				t.Fatalf("agent-1's state: %v, %v\n%s", st, err, log)
			}
			head := gitIn(t, w.repo, "rev-parse", "HEAD")
			ctx := st.Context
			if len(ctx.CommitsMade) != 1 || ctx.CommitsMade[0] != head {
				t.Errorf("commits_made = %q, want [%s]", ctx.CommitsMade, head)
			}
			if strings.Join(ctx.FilesModified, " ") != "loose.txt one.txt" {
				t.Errorf("files_modified = %q, want [loose.txt one.txt]", ctx.FilesModified)
			}
			if ctx.Notes != "t1 attempt 1: done" {
				t.Errorf("notes = %q, want %q", ctx.Notes, "t1 attempt 1: done")
			}
			w.valid()
		})
	}
}

// TestCommitEach: with --commit-each, what an attempt changed in its task's tree is committed
// with the trailers naming the task and the attempt, nothing of the queue's or the records'.
func TestCommitEach(t *testing.T) {
	w := gitWorld(t, "t1: touch:made.txt")
	log := newLogWatch()
	cfg := w.config(1, 1, log)
	cfg.CommitEach = true
	if res := w.run(context.Background(), cfg); res.Counts[store.Done] != 1 {
		t.Fatalf("Run = %+v, want 1 done\n%s", res.Counts, log)
	}
	if files := gitIn(t, w.repo, "show", "--name-only", "--format=", "HEAD"); files != "made.txt" {
		t.Errorf("HEAD holds %q, want made.txt alone\n%s", files, log)
	}
	if msg := gitIn(t, w.repo, "log", "-1", "--format=%B"); !strings.Contains(msg, "Ralph-Loop: p-t1\nRalph-Iteration: 1") {
		t.Errorf("HEAD's message %q lacks the task's trailers", msg)
	}
	w.valid()
}

// TestWorktreeCheckoutsOverlap: only the registration of a task's worktree is one at a time;
// the checkouts of two tasks on two agents run at once. The repository's file has a smudge
// filter that, inside each checkout, leaves a marker and waits (at most 20 s) for another
// checkout's marker, then records whether it saw one: with the checkout under the lock, the
// first waits out its bound alone and records "none".
func TestWorktreeCheckoutsOverlap(t *testing.T) {
	w := gitWorld(t, "t1: one check:slow.txt", "t2: two check:slow.txt")
	record := testenv.MeetingFilter(t, w.repo)
	log := newLogWatch()
	cfg := w.config(2, 0, log)
	cfg.Worktree = true
	res := w.run(context.Background(), cfg)
	if res.Counts[store.Done] != 2 {
		t.Fatalf("Run = %+v, want 2 done\n%s", res.Counts, log)
	}
	if got := testenv.Met(record); strings.Join(got, " ") != "other other" {
		t.Errorf("the checkouts' smudge filters saw %q, want [other other]: a checkout ran alone", got)
	}
}

// TestWorktreeNeverCheckedOutIsRemade: a task's worktree that a killed run registered but never
// checked out (git worktree add --no-checkout, on the task's branch) is not kept as an earlier
// attempt's work: it is made again, with the base's files.
func TestWorktreeNeverCheckedOutIsRemade(t *testing.T) {
	w := gitWorld(t, "t1: use check:.gitignore")
	path := filepath.Join(w.tmp, "repo-worktrees", "p-t1")
	gitIn(t, w.repo, "worktree", "add", "--quiet", "--no-checkout", "-B", "agent/p-t1", path, "main")
	log := newLogWatch()
	cfg := w.config(1, 0, log)
	cfg.Worktree = true
	res := w.run(context.Background(), cfg)
	if res.Counts[store.Done] != 1 {
		t.Fatalf("Run = %+v, want t1 done in a checked-out worktree\n%s", res.Counts, log)
	}
	if st := gitIn(t, path, "status", "--porcelain"); st != "" {
		t.Errorf("t1's worktree is not clean:\n%s", st)
	}
}

// TestWorktreeDependencyNamedLikeATag: a tag named like a done dependency's branch (a tag
// agent/p-t1 at the base) does not stand in for the branch: the dependent's worktree merges
// refs/heads/agent/p-t1 and sees its commit (issue 27, 6: git merge took the tag).
func TestWorktreeDependencyNamedLikeATag(t *testing.T) {
	w := gitWorld(t, "t1: make one commit:one.txt", "t2: use one check:one.txt commit:two.txt (after t1)")
	gitIn(t, w.repo, "tag", "agent/p-t1")
	log := newLogWatch()
	cfg := w.config(1, 1, log)
	cfg.Worktree = true
	res := w.run(context.Background(), cfg)
	if res.Counts[store.Done] != 2 {
		t.Fatalf("Run = %+v, want 2 done (t2 saw t1's commit)\n%s", res.Counts, log)
	}
	if got := gitIn(t, w.repo, "show", "refs/heads/agent/p-t2:one.txt"); got != "t1" {
		t.Errorf("agent/p-t2:one.txt = %q, want t1", got)
	}
}

// TestWorktreeAgentOnItsOwnBranch: an agent that switches to a branch of its own and commits
// there has its commits brought onto the task's branch, which its dependent merges; one that
// switches to a branch with no history fails, naming both branches (issue 27, 7).
func TestWorktreeAgentOnItsOwnBranch(t *testing.T) {
	w := gitWorld(t, "t1: switch:other commit:one.txt", "t2: use one check:one.txt commit:two.txt (after t1)",
		"t3: orphan:stray commit:three.txt")
	log := newLogWatch()
	cfg := w.config(2, 1, log)
	cfg.Worktree = true
	res := w.run(context.Background(), cfg)
	if res.Counts[store.Done] != 2 || res.Counts[store.Failed] != 1 {
		t.Fatalf("Run = %+v, want 2 done, 1 failed\n%s", res.Counts, log)
	}
	if got := gitIn(t, w.repo, "show", "refs/heads/agent/p-t1:one.txt"); got != "t1" {
		t.Errorf("agent/p-t1:one.txt = %q, want t1", got)
	}
	if t3 := w.task("t3"); !strings.Contains(t3.Error, "branch stray") || !strings.Contains(t3.Error, "agent/p-t3") {
		t.Errorf("t3's error = %q, want it to name stray and agent/p-t3", t3.Error)
	}
}

// TestWorktreeBaseNamedLikeATag: the base branch is read as refs/heads/main even when a tag
// main names another commit (git rev-parse main reads the tag first): the tasks start from
// the branch (issue 27, 6).
func TestWorktreeBaseNamedLikeATag(t *testing.T) {
	w := gitWorld(t, "t1: make one commit:one.txt")
	gitIn(t, w.repo, "switch", "-q", "-c", "side")
	if err := os.WriteFile(filepath.Join(w.repo, "tagged.txt"), []byte("not the base\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(t, w.repo, "add", "tagged.txt")
	gitIn(t, w.repo, "commit", "-q", "-m", "tagged")
	gitIn(t, w.repo, "tag", "main")
	gitIn(t, w.repo, "switch", "-q", "main")
	log := newLogWatch()
	cfg := w.config(1, 1, log)
	cfg.Worktree, cfg.BaseBranch = true, "main"
	res := w.run(context.Background(), cfg)
	if res.Counts[store.Done] != 1 {
		t.Fatalf("Run = %+v, want 1 done\n%s", res.Counts, log)
	}
	if files := gitIn(t, w.repo, "ls-tree", "--name-only", "refs/heads/agent/p-t1"); strings.Contains(files, "tagged.txt") {
		t.Errorf("t1's branch started from the tag main, not the branch: it has %s", files)
	}
}

// TestWorktreeKeptBesideATagOfItsName: a retry goes on in the worktree its failed attempt left
// even when a tag is named like the task's branch: the worktree's HEAD is compared in full
// (refs/heads/agent/p-t1), where git symbolic-ref --short says heads/agent/p-t1 beside the tag
// and the worktree was made again, its work gone (issue 27, 6).
func TestWorktreeKeptBesideATagOfItsName(t *testing.T) {
	w := gitWorld(t, "t1: check:left.txt touch:left.txt")
	gitIn(t, w.repo, "tag", "agent/p-t1")
	log := newLogWatch()
	cfg := w.config(1, 2, log)
	cfg.Worktree = true
	res := w.run(context.Background(), cfg)
	if res.Counts[store.Done] != 1 {
		t.Fatalf("Run = %+v, want t1 done on its retry, in the worktree its first attempt left\n%s", res.Counts, log)
	}
}
