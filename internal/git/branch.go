package git

import (
	"context"
	"fmt"
	"strings"
)

// StrayError is a worktree whose HEAD an agent moved off the task's branch, to a branch (or a
// detached HEAD) that does not hold the branch's commit: its work cannot be brought onto the
// task's branch by a fast-forward, and is left where it is.
type StrayError struct {
	Branch string // the task's branch
	Head   string // where HEAD is: "branch other", or "a detached HEAD at 1234abcd"
}

func (e *StrayError) Error() string {
	return fmt.Sprintf("the agent left the worktree on %s, which does not descend from the task's branch %s: its work is there, not on %s; rebase it onto %s or run the task again",
		e.Head, e.Branch, e.Branch, e.Branch)
}

// NewStrayError is the StrayError of a worktree whose HEAD is headRef (what git symbolic-ref -q
// HEAD says: refs/heads/<name>, or "" when detached) at headSHA, off the task's branch: for a
// worktree read elsewhere (a host's), by the same rule as ReturnToBranch.
func NewStrayError(branch, headRef, headSHA string) *StrayError {
	return &StrayError{Branch: branch, Head: orDetached(headRef, headSHA)}
}

// ReturnToBranch makes sure that the worktree r, where an agent worked on branch, is on branch
// again, with the agent's commits on it. Coding agents often switch to a branch of their own
// (git switch -c …): their commits are then on that branch, and branch stays where it was.
// When HEAD is on another branch or detached at a commit that descends from branch's tip,
// branch is fast-forwarded to that commit and HEAD is put back on branch (the index and the
// files are untouched: they are that commit's either way); from names where HEAD was
// ("" when it was on branch). When HEAD's commit does not descend from the tip, nothing moves
// and the error is a *StrayError naming both. Every ref is named in full (refs/heads/…).
func (r Repo) ReturnToBranch(ctx context.Context, branch string) (from string, err error) {
	full := "refs/heads/" + branch
	ref, err := r.git(ctx, "symbolic-ref", "-q", "HEAD")
	if err == nil && ref == full {
		return "", nil
	}
	head, err := r.git(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return "", fmt.Errorf("the worktree's HEAD (%s) names no commit: %w", orDetached(ref, ""), err)
	}
	from = orDetached(ref, head)
	tip, err := r.git(ctx, "rev-parse", "--verify", "--quiet", full+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("the task's branch %s is gone (the worktree is on %s)", branch, from)
	}
	// merge-base prints tip when tip is an ancestor of head (or head itself); it fails with
	// nothing printed when the two share no history (an orphan branch).
	if mb, _ := r.git(ctx, "merge-base", tip, head); mb != tip {
		return "", &StrayError{Branch: branch, Head: from}
	}
	// Only from the tip read above: a branch moved meanwhile is not overwritten.
	if _, err := r.git(ctx, "update-ref", "-m", "brought back from "+from, full, head, tip); err != nil {
		return "", err
	}
	if _, err := r.git(ctx, "symbolic-ref", "-m", "back to "+branch, "HEAD", full); err != nil {
		return "", err
	}
	return from, nil
}

// OnBranch says whether the worktree r has branch checked out: its HEAD is refs/heads/<branch>,
// compared in full. (Branch's git symbolic-ref --short says heads/<branch> when a tag shares
// the name.)
func (r Repo) OnBranch(ctx context.Context, branch string) bool {
	ref, err := r.git(ctx, "symbolic-ref", "-q", "HEAD")
	return err == nil && ref == "refs/heads/"+branch
}

// orDetached names where HEAD is from symbolic-ref's answer: "branch X", or a detached HEAD.
func orDetached(ref, sha string) string {
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		return "branch " + b
	}
	if len(sha) > 12 {
		sha = sha[:12]
	}
	if sha == "" {
		return "a detached HEAD"
	}
	return "a detached HEAD at " + sha
}
