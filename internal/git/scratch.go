package git

import (
	"context"
	"strings"
)

// AddScratchWorktree makes a detached worktree at path, checked out at commit, for work that
// must not happen in the user's checkout (merging branches back, mergeback). Whatever an earlier
// one left at path is removed first; with beneath, nothing below it is resolved through a link
// (MergeSpec.Beneath), before git makes the worktree and after.
func (r Repo) AddScratchWorktree(ctx context.Context, path, beneath, commit string) error {
	if err := r.clearWorktreePath(ctx, path, beneath); err != nil {
		return err
	}
	if _, err := r.git(ctx, "worktree", "add", "--quiet", "--detach", path, commit); err != nil {
		return err
	}
	if beneath != "" {
		d, err := openBeneath(path, beneath)
		if err != nil {
			return err
		}
		d.Close()
	}
	return nil
}

// RemoveScratchWorktree removes the worktree at path that AddScratchWorktree made, without
// following a link below beneath, and has git forget it.
func (r Repo) RemoveScratchWorktree(ctx context.Context, path, beneath string) error {
	return r.clearWorktreePath(ctx, path, beneath)
}

// CheckedOutAt is the worktree that has refs/heads/branch checked out ("" when none does):
// git refuses to move such a branch (git branch -f) because the checkout would then see the
// difference as its own changes.
func (r Repo) CheckedOutAt(ctx context.Context, branch string) (string, error) {
	out, err := r.git(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return "", err
	}
	wt := ""
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "worktree "):
			wt = strings.TrimPrefix(l, "worktree ")
		case l == "branch refs/heads/"+branch:
			return wt, nil
		}
	}
	return "", nil
}
