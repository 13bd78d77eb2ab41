package git

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func commitFile(t *testing.T, dir, name, text, msg string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "add", name)
	run(t, dir, "commit", "-q", "-m", msg)
}

// TestFindUnsaved: each way a worktree's work is kept elsewhere (or not), as kill --rm-worktree,
// clean and respawn --clean-first judge it.
func TestFindUnsaved(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name           string
		setup          func(t *testing.T, repo, wt string)
		files, commits int
	}{
		{"fresh", func(t *testing.T, repo, wt string) {}, 0, 0},
		{"untracked", func(t *testing.T, repo, wt string) {
			os.WriteFile(filepath.Join(wt, "new.txt"), []byte("x"), 0o644)
		}, 1, 0},
		{"modified", func(t *testing.T, repo, wt string) {
			commitFile(t, wt, "a.txt", "1", "a")
			run(t, repo, "merge", "-q", "--ff-only", "w")
			os.WriteFile(filepath.Join(wt, "a.txt"), []byte("2"), 0o644)
		}, 1, 0},
		{"ignored files do not count", func(t *testing.T, repo, wt string) {
			commitFile(t, wt, ".gitignore", "*.log\n", "ignore")
			run(t, repo, "merge", "-q", "--ff-only", "w")
			os.WriteFile(filepath.Join(wt, "x.log"), []byte("x"), 0o644)
		}, 0, 0},
		{"unmerged commits", func(t *testing.T, repo, wt string) {
			commitFile(t, wt, "a.txt", "1", "first")
			commitFile(t, wt, "b.txt", "2", "second")
		}, 0, 2},
		{"merged", func(t *testing.T, repo, wt string) {
			commitFile(t, wt, "a.txt", "1", "first")
			run(t, repo, "merge", "-q", "--no-ff", "-m", "merge", "w")
		}, 0, 0},
		{"on another branch", func(t *testing.T, repo, wt string) {
			commitFile(t, wt, "a.txt", "1", "first")
			run(t, repo, "branch", "backup", "w")
		}, 0, 0},
		{"cherry-picked", func(t *testing.T, repo, wt string) {
			commitFile(t, wt, "a.txt", "1", "first")
			run(t, repo, "cherry-pick", "w")
		}, 0, 0},
		{"squash-merged", func(t *testing.T, repo, wt string) {
			commitFile(t, wt, "a.txt", "1", "first")
			commitFile(t, wt, "b.txt", "2", "second")
			run(t, repo, "merge", "-q", "--squash", "w")
			run(t, repo, "commit", "-q", "-m", "squashed")
		}, 0, 0},
		{"partly merged", func(t *testing.T, repo, wt string) {
			commitFile(t, wt, "a.txt", "1", "first")
			run(t, repo, "cherry-pick", "w")
			commitFile(t, wt, "b.txt", "2", "second")
		}, 0, 1},
		{"empty commit", func(t *testing.T, repo, wt string) {
			run(t, wt, "commit", "-q", "--allow-empty", "-m", "a note")
		}, 0, 1},
		{"detached HEAD with a commit", func(t *testing.T, repo, wt string) {
			run(t, wt, "checkout", "-q", "--detach")
			commitFile(t, wt, "a.txt", "1", "lost")
			run(t, repo, "branch", "-D", "w")
		}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t)
			wt := r.WorktreePath("w")
			if err := r.AddWorktree(ctx, wt, "w"); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, r.Dir, wt)
			u, err := FindUnsaved(ctx, wt)
			if err != nil {
				t.Fatal(err)
			}
			if len(u.Files) != tc.files || len(u.Commits) != tc.commits {
				t.Errorf("FindUnsaved = files %q commits %q, want %d files %d commits", u.Files, u.Commits, tc.files, tc.commits)
			}
			err = CheckRemovable(ctx, wt)
			if want := tc.files+tc.commits > 0; errors.Is(err, ErrUnsaved) != want {
				t.Errorf("CheckRemovable = %v, want unsaved %v", err, want)
			}
		})
	}
}

func TestUnsavedMessage(t *testing.T) {
	u := &Unsaved{Files: []string{"?? new.txt", " M a.go"}, Commits: []string{"abc1234 first"}}
	want := "worktree has 2 uncommitted change(s): ?? new.txt,  M a.go; 1 commit(s) on no other branch: abc1234 first"
	if got := u.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var many []string
	for i := 0; i < 12; i++ {
		many = append(many, "?? f")
	}
	if got := (&Unsaved{Files: many}).Error(); !strings.HasSuffix(got, ", and 2 more") {
		t.Errorf("Error() of 12 files = %q, want the last 2 counted", got)
	}
}

func TestDeleteBranchAt(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	start := r.Head(ctx)
	run(t, r.Dir, "branch", "b1")
	run(t, r.Dir, "branch", "b2")
	wt := r.WorktreePath("b2")
	if err := r.AddWorktree(ctx, wt, "b2"); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteBranchAt(ctx, "b1", start); err != nil || r.HasBranch(ctx, "b1") {
		t.Errorf("DeleteBranchAt(b1 at its start) = %v, branch left %v", err, r.HasBranch(ctx, "b1"))
	}
	commitFile(t, wt, "a.txt", "1", "work")
	run(t, r.Dir, "worktree", "remove", "--force", wt)
	if err := r.DeleteBranchAt(ctx, "b2", start); err == nil || !r.HasBranch(ctx, "b2") {
		t.Errorf("DeleteBranchAt(b2 moved on) = %v, want refused and the branch kept", err)
	}
}
