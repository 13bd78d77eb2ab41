package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Unsaved is the work a worktree holds that would be lost with it: uncommitted changes (as
// `git status --porcelain` lists them, untracked files included, ignored ones not) and commits
// reachable from its HEAD that are on no other branch, local or remote, and whose changes no
// other branch has either (a cherry-pick, a rebase or a squash merge counts as merged).
type Unsaved struct {
	Path    string
	Files   []string // porcelain lines: "?? new.txt", " M main.go"
	Commits []string // "abc1234 subject", newest first
}

// Empty reports whether nothing would be lost.
func (u *Unsaved) Empty() bool { return len(u.Files) == 0 && len(u.Commits) == 0 }

// listLimit is how many files or commits a refusal names before it counts the rest.
const listLimit = 10

// Error says what would be lost, naming the files and commits. Its beginning is the Python
// swarm's own message ("worktree has N uncommitted change(s)").
func (u *Unsaved) Error() string {
	var parts []string
	if len(u.Files) > 0 {
		parts = append(parts, fmt.Sprintf("worktree has %d uncommitted change(s): %s", len(u.Files), clip(u.Files)))
	}
	if len(u.Commits) > 0 {
		parts = append(parts, fmt.Sprintf("%d commit(s) on no other branch: %s", len(u.Commits), clip(u.Commits)))
	}
	if len(parts) == 0 {
		return "worktree has no unsaved work"
	}
	return strings.Join(parts, "; ")
}

func clip(l []string) string {
	if len(l) <= listLimit {
		return strings.Join(l, ", ")
	}
	return strings.Join(l[:listLimit], ", ") + fmt.Sprintf(", and %d more", len(l)-listLimit)
}

// ErrUnsaved is matched (errors.Is) by every *Unsaved returned as an error.
var ErrUnsaved = errors.New("worktree holds unsaved work")

// Is makes errors.Is(err, ErrUnsaved) true for an *Unsaved.
func (u *Unsaved) Is(target error) bool { return target == ErrUnsaved }

// FindUnsaved returns what removing the worktree at path would lose. A path that does not exist
// holds nothing. An error means it could not tell, which callers take as "keep it".
func FindUnsaved(ctx context.Context, path string) (*Unsaved, error) {
	u := &Unsaved{Path: path}
	if _, err := os.Stat(path); err != nil {
		return u, nil
	}
	wt := Repo{Dir: path}
	// --branch puts a "## branch" line first, so the trimming of git's output never eats the
	// leading space of a first " M file" line.
	status, err := wt.git(ctx, "status", "--porcelain", "--branch")
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(status, "\n") {
		if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "## ") {
			u.Files = append(u.Files, strings.TrimRight(l, "\r"))
		}
	}
	u.Commits, err = wt.unmergedCommits(ctx)
	if err != nil {
		return nil, err
	}
	return u, nil
}

// unmergedCommits lists the commits of HEAD that no other ref holds, less those whose changes
// another branch has (git cherry: the patch-id of each commit, and of the whole run squashed
// into one, since a squash merge holds no single commit's patch).
func (r Repo) unmergedCommits(ctx context.Context) ([]string, error) {
	head, err := r.git(ctx, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil || head == "" {
		return nil, nil // no commit yet: nothing to lose but files
	}
	branch, _ := r.git(ctx, "symbolic-ref", "-q", "HEAD")
	refs, err := r.git(ctx, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes", "refs/tags")
	if err != nil {
		return nil, err
	}
	var others []string
	for _, ref := range strings.Split(refs, "\n") {
		if ref != "" && ref != branch && !strings.HasSuffix(ref, "/HEAD") {
			others = append(others, ref)
		}
	}
	args := append([]string{"rev-list", "--format=%h %s", "--no-commit-header", "HEAD", "--not"}, others...)
	out, err := r.git(ctx, args...)
	if err != nil {
		// --no-commit-header is git 2.33+; older: skip "commit <sha>" lines.
		args = append([]string{"rev-list", "--format=%h %s", "HEAD", "--not"}, others...)
		if out, err = r.git(ctx, args...); err != nil {
			return nil, err
		}
	}
	var commits []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, "commit ") {
			commits = append(commits, l)
		}
	}
	if len(commits) == 0 {
		return nil, nil
	}
	// Merged by patch? Against each local branch (the usual targets of a merge) and the remote
	// ones: every commit cherry marks "-" there, or the squash of the run, is merged.
	for _, up := range others {
		if !strings.HasPrefix(up, "refs/heads/") && !strings.HasPrefix(up, "refs/remotes/") {
			continue
		}
		if r.squashMerged(ctx, up, head) {
			return nil, nil
		}
		cherry, err := r.git(ctx, "cherry", up, head)
		if err != nil {
			continue
		}
		left := map[string]bool{}
		for _, l := range strings.Split(cherry, "\n") {
			if strings.HasPrefix(l, "+ ") {
				left[l[2:]] = true
			}
		}
		var still []string
		for _, c := range commits {
			short, _, _ := strings.Cut(c, " ")
			full, err := r.git(ctx, "rev-parse", short)
			// An empty commit has no patch, so cherry takes it for merged: it is not.
			if err != nil || left[full] || r.empty(ctx, full) {
				still = append(still, c)
			}
		}
		commits = still
		if len(commits) == 0 {
			return nil, nil
		}
	}
	return commits, nil
}

// squashMerged reports whether the changes of head since its merge base with up, taken as one
// patch, are in up (a squash merge). The throwaway commit is a dangling object git collects.
func (r Repo) squashMerged(ctx context.Context, up, head string) bool {
	base, err := r.git(ctx, "merge-base", up, head)
	if err != nil || base == "" || base == head {
		return false
	}
	if _, err := r.git(ctx, "diff", "--quiet", base, head); err == nil {
		return false // no change at all: nothing a squash could have carried
	}
	tmp, err := r.git(ctx, "commit-tree", head+"^{tree}", "-p", base, "-m", "swarm: squash check")
	if err != nil {
		return false
	}
	out, err := r.git(ctx, "cherry", up, tmp)
	return err == nil && strings.HasPrefix(out, "- ")
}

// CheckRemovable returns nil when the worktree at path can be removed without losing work, an
// *Unsaved (errors.Is ErrUnsaved) naming the files and commits it would lose, or why it could
// not tell. It is what kill --rm-worktree, clean and respawn --clean-first ask before removing.
func CheckRemovable(ctx context.Context, path string) error {
	u, err := FindUnsaved(ctx, path)
	if err != nil {
		return fmt.Errorf("cannot tell whether %s holds unsaved work: %w", path, err)
	}
	if !u.Empty() {
		return u
	}
	return nil
}

// DeleteBranchAt deletes branch only while it still points at sha (an update-ref with the old
// value: atomic, so a commit made meanwhile keeps it). A spawn undoing a branch it created
// calls it with the commit it created the branch at.
func (r Repo) DeleteBranchAt(ctx context.Context, branch, sha string) error {
	if branch == "" || sha == "" {
		return errors.New("DeleteBranchAt: branch and commit required")
	}
	_, err := r.git(ctx, "update-ref", "-d", "refs/heads/"+branch, sha)
	return err
}

// Head returns the commit HEAD points at ("" in a repository with no commit yet).
func (r Repo) Head(ctx context.Context) string {
	out, _ := r.git(ctx, "rev-parse", "--verify", "-q", "HEAD")
	return out
}

// empty reports whether commit changes nothing (its tree is its first parent's, or the empty
// tree's for a root commit).
func (r Repo) empty(ctx context.Context, commit string) bool {
	_, err := r.git(ctx, "diff-tree", "--quiet", "--root", "-r", commit)
	return err == nil
}
