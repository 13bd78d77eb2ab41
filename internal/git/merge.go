package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agentfleet/fleet/internal/fsx"
)

// Identity is what commit commands in the repository are prefixed with: nothing when it has a
// user.email configured, else name and email (-c user.name=… -c user.email=…), so that a
// tool's merge and checkpoint commits never fail on "Please tell me who you are". Worktrees
// share the repository's config: ask once.
func (r Repo) Identity(ctx context.Context, name, email string) []string {
	if e, _ := r.git(ctx, "config", "user.email"); e != "" {
		return nil
	}
	return []string{"-c", "user.name=" + name, "-c", "user.email=" + email}
}

// Commit is the commit rev names (a branch, a tag, a SHA).
func (r Repo) Commit(ctx context.Context, rev string) (string, error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("invalid revision %q", rev)
	}
	return r.git(ctx, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
}

// ConflictError is a merge of a dependency's branch into a worktree that stopped on conflicts.
type ConflictError struct {
	Branch string   // the branch being merged
	Files  []string // the files in conflict
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("merging %s conflicts in %s", e.Branch, strings.Join(e.Files, ", "))
}

// MergeSpec is how PrepareWorktree makes a worktree: Base (a commit or branch) with each of
// Deps' branches merged in, in order, by commits that carry Ident (Identity) and a message
// that starts with Label.
type MergeSpec struct {
	Base  string
	Deps  []string
	Ident []string
	Label string
	// Lock, when set, is held while the worktree is registered (git worktree add), and only
	// then: concurrent adds race on the administrative files (one add reads every worktree's
	// while another writes its own: "failed to read .git/worktrees/X/commondir"). The checkout
	// and the merges work in the worktree alone and run outside it, so that the tasks' checkouts
	// overlap.
	Lock sync.Locker
	// Hooked says the repository has a post-checkout hook (HasHook): the worktree is then made
	// by one git worktree add under Lock, which runs the hook after its checkout as it always
	// did. Else it is registered with --no-checkout under Lock and checked out after it as git
	// worktree add does it (reset --hard), which runs no hook and is the same checkout.
	Hooked bool
	// Registered, when set, is called once the worktree is registered and before it is checked
	// out (a test's crash point), outside Lock; RepointWorktree calls it before its checkout.
	Registered func()
	// Beneath, when set, is a directory above the worktree's path (the caller's, which may be
	// reached through a link) below which nothing is resolved through a link: every directory
	// between it and the worktree must be a real one (a link there is refused), and whatever an
	// earlier attempt left at the path is removed without being followed (a link there is
	// removed as a link, never handed to git worktree remove, which would resolve it).
	Beneath string
	// NewBranch says the branch is not the caller's yet: it is created (git worktree add -b)
	// and one that exists already is an error, never reset. Else it is made or reset (-B).
	NewBranch bool
}

// PrepareWorktree makes the repository's worktree at path on branch, fresh from m.Base with
// each of m.Deps merged in (git merge --no-ff refs/heads/<dep>: a branch, whatever else is
// named like it). A worktree or branch left at path by an
// earlier attempt is replaced: every attempt starts from the same commit. It returns that
// commit. A conflict is a *ConflictError naming the files; the merge is aborted and the
// worktree is left at the merges before it. Only the registration holds m.Lock (see MergeSpec).
func (r Repo) PrepareWorktree(ctx context.Context, path, branch string, m MergeSpec) (string, error) {
	if m.Lock != nil {
		m.Lock.Lock()
	}
	err := r.registerWorktree(ctx, path, branch, m)
	if m.Lock != nil {
		m.Lock.Unlock()
	}
	if err != nil {
		return "", err
	}
	if m.Registered != nil {
		m.Registered()
	}
	wt := Repo{Dir: path}
	if !m.Hooked {
		// The checkout git worktree add runs (builtin/worktree.c), in the worktree alone.
		if _, err := wt.git(ctx, "reset", "--hard", "--no-recurse-submodules", "--quiet"); err != nil {
			return "", err
		}
	}
	return wt.mergeDeps(ctx, branch, m)
}

// RepointWorktree puts the repository's worktree at path, which a task before left clean (its
// work committed, nothing untracked), on branch, fresh from m.Base with each of m.Deps merged
// in, as PrepareWorktree makes one: git checkout --force of the branch made (-b with
// m.NewBranch, else -B) at m.Base, which leaves tracked files as m.Base has them, and, with
// clean, git clean -ffdx for what git ignores (a build's output). It is one or two git
// processes where a worktree made anew is four; a worktree kept per slot is re-pointed for
// each task this way. m.Lock is not taken: nothing here writes the administrative files of
// another worktree. A failure leaves the worktree as git left it: the caller makes it anew
// (PrepareWorktree). With m.Beneath, the path is checked first to be a real directory below
// it, no link on the way.
func (r Repo) RepointWorktree(ctx context.Context, path, branch string, clean bool, m MergeSpec) (string, error) {
	if m.Beneath != "" {
		d, err := openBeneath(path, m.Beneath)
		if err != nil {
			return "", err
		}
		d.Close()
	}
	if m.Registered != nil {
		// The worktree is the task's, not checked out on its branch yet: the crash point of a
		// registration.
		m.Registered()
	}
	create := "-B"
	if m.NewBranch {
		create = "-b"
	}
	wt := Repo{Dir: path}
	if _, err := wt.git(ctx, "checkout", "--quiet", "--force", "--no-recurse-submodules", "--no-track", create, branch, m.Base); err != nil {
		return "", err
	}
	if clean {
		if _, err := wt.git(ctx, "clean", "-ffdxq"); err != nil {
			return "", err
		}
	}
	return wt.mergeDeps(ctx, branch, m)
}

// MoveWorktree moves the repository's worktree at from to to (git worktree move), what was at
// to removed first. With beneath, neither path is resolved through a link: from must be a real
// directory below it, and to is cleared as PrepareWorktree clears its path. A worktree kept for
// a task that did not complete is moved out of its slot this way.
func (r Repo) MoveWorktree(ctx context.Context, from, to, beneath string) error {
	if beneath != "" {
		d, err := openBeneath(from, beneath)
		if err != nil {
			return err
		}
		d.Close()
	}
	if err := r.clearWorktreePath(ctx, to, beneath); err != nil {
		return err
	}
	_, err := r.git(ctx, "worktree", "move", from, to)
	return err
}

// ClearWorktreePath removes what is at path, a worktree or anything else, as PrepareWorktree
// clears its path (with beneath, never through a link).
func (r Repo) ClearWorktreePath(ctx context.Context, path, beneath string) error {
	return r.clearWorktreePath(ctx, path, beneath)
}

// mergeDeps merges each of m.Deps' branches into the worktree wt, on branch, in order, and
// returns its HEAD (m.Base when there is none). A conflict is a *ConflictError.
func (wt Repo) mergeDeps(ctx context.Context, branch string, m MergeSpec) (string, error) {
	if len(m.Deps) == 0 {
		return m.Base, nil
	}
	for _, d := range m.Deps {
		// The branch in full: git reads a bare name as a tag (or refs/<name>, or a file in the
		// repository's directory) before it reads it as a branch.
		args := append(append([]string{}, m.Ident...), "merge", "--no-ff", "--no-edit", "-m", m.Label+": merge "+d+" into "+branch, "refs/heads/"+d)
		_, err := wt.git(ctx, args...)
		if err == nil {
			continue
		}
		files, _ := wt.git(ctx, "diff", "--name-only", "--diff-filter=U")
		wt.git(ctx, "merge", "--abort")
		if files != "" {
			return "", &ConflictError{Branch: d, Files: strings.Fields(files)}
		}
		return "", err
	}
	return wt.git(ctx, "rev-parse", "HEAD")
}

// registerWorktree is git worktree add -B branch path m.Base (-b with m.NewBranch), with
// --no-checkout unless m.Hooked: a worktree or directory at path is removed first, and a
// worktree that a killed run left half made (registered, locked while initializing, its
// directory missing) is dropped and the add tried again. A worktree registered but never
// checked out (a run killed between the two) is an existing worktree like any other: removed,
// and made again. With m.Beneath, nothing below it is resolved through a link (MergeSpec).
func (r Repo) registerWorktree(ctx context.Context, path, branch string, m MergeSpec) error {
	if err := r.clearWorktreePath(ctx, path, m.Beneath); err != nil {
		return err
	}
	add := []string{"worktree", "add", "--quiet"}
	if !m.Hooked {
		add = append(add, "--no-checkout")
	}
	create := "-B"
	if m.NewBranch {
		create = "-b" // which git refuses for a branch that exists
	}
	if _, err := r.git(ctx, append(add, create, branch, path, m.Base)...); err != nil {
		r.git(ctx, "worktree", "unlock", path)
		r.git(ctx, "worktree", "prune")
		// Tried again with -B: a failed add -b may have made the branch (git makes it before
		// the worktree), and that branch, at m.Base, is this add's own; one elsewhere is not
		// (one at m.Base that is not loses nothing when reset there).
		if m.NewBranch && !r.branchAt(ctx, branch, m.Base) {
			return fmt.Errorf("%w: %s", ErrBranchExists, branch)
		}
		if _, err := r.git(ctx, append(add, "-B", branch, path, m.Base)...); err != nil {
			return err
		}
	}
	if m.Beneath != "" {
		// A link planted while git made the worktree is found before anything works in it.
		d, err := openBeneath(path, m.Beneath)
		if err != nil {
			return err
		}
		d.Close()
	}
	return nil
}

// branchAt says whether refs/heads/branch is missing or at the commit rev names.
func (r Repo) branchAt(ctx context.Context, branch, rev string) bool {
	at, err := r.Commit(ctx, "refs/heads/"+branch)
	if err != nil {
		return true
	}
	want, err := r.Commit(ctx, rev)
	return err == nil && at == want
}

// ErrBranchExists is a branch PrepareWorktree was to create (MergeSpec.NewBranch) that exists.
var ErrBranchExists = errors.New("the branch exists already")

// clearWorktreePath removes what is at path, a worktree of an earlier attempt or anything else.
// Without beneath it asks git first (git worktree remove --force), then removes the directory.
// With beneath, the directories down to path's are opened one by one, never through a link
// (fsx.OpenDirBeneath), and what is at path is removed from its parent's descriptor: a link is
// removed as a link, a directory without following any link in it. git is then told to forget
// the worktrees whose directory is gone (git worktree prune): no path is given to git, which
// would resolve it.
func (r Repo) clearWorktreePath(ctx context.Context, path, beneath string) error {
	if beneath == "" {
		if _, err := os.Lstat(path); err == nil {
			if _, err := r.git(ctx, "worktree", "remove", "--force", path); err != nil {
				if err := os.RemoveAll(path); err != nil {
					return err
				}
				r.git(ctx, "worktree", "prune")
			}
		}
		return nil
	}
	parent, err := openBeneath(filepath.Dir(path), beneath)
	if err != nil {
		return err
	}
	defer parent.Close()
	existed, err := fsx.RemoveAt(parent, filepath.Base(path))
	if err != nil {
		return err
	}
	if existed {
		r.git(ctx, "worktree", "prune")
	}
	return nil
}

// openBeneath opens the directory dir, below beneath, making what is missing, never through a
// link (fsx.OpenDirBeneath).
func openBeneath(dir, beneath string) (*os.File, error) {
	rel, err := filepath.Rel(beneath, dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("%s is not below %s", dir, beneath)
	}
	return fsx.OpenDirBeneath(beneath, rel, true)
}

// HasHook says whether git would run one of the repository's hooks names (post-checkout; the
// hooks of git commit): an executable regular file of that name in its hooks directory
// (core.hooksPath included, a relative one read from the top of the work tree, as git reads
// it). The directory is looked up once, whatever the number of names.
func (r Repo) HasHook(ctx context.Context, names ...string) bool {
	top, err := r.git(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return false
	}
	hooks, err := Repo{Dir: top}.git(ctx, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	if err != nil {
		return false
	}
	for _, name := range names {
		if fi, err := os.Stat(filepath.Join(hooks, name)); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return true
		}
	}
	return false
}

// CheckedOut says whether the worktree at path was checked out: it has an index. A worktree
// registered with --no-checkout by a run killed before its checkout has none.
func CheckedOut(ctx context.Context, path string) bool {
	idx, err := Repo{Dir: path}.git(ctx, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return false
	}
	fi, err := os.Stat(idx)
	return err == nil && fi.Mode().IsRegular()
}

// DeleteBranch deletes refs/heads/name, merged or not; a missing branch is no error.
func (r Repo) DeleteBranch(ctx context.Context, name string) error {
	if !r.HasBranch(ctx, name) {
		return nil
	}
	_, err := r.git(ctx, "branch", "-D", "--", name)
	return err
}

// BranchesUnder is the set of local branches whose names start with prefix (agent/), from one
// git command.
func (r Repo) BranchesUnder(ctx context.Context, prefix string) map[string]bool {
	out, err := r.git(ctx, "for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads/"+prefix)
	set := map[string]bool{}
	if err != nil {
		return set
	}
	for _, b := range strings.Split(out, "\n") {
		if b != "" {
			set[b] = true
		}
	}
	return set
}

// OrderConflict is the first branch of a merge order that merges onto those before it only with
// conflicts: the order stops before it.
type OrderConflict struct {
	ID     string
	Branch string
	Files  []string
}

// MergeOrder is a topological order of the ids in order (each after its dependencies, the
// given order kept otherwise) in which every id's branch merges cleanly onto the branch base
// and the branches before it, checked with git merge-tree --write-tree (nothing is checked
// out; the merges are commits no ref points at, made with ident). Among the ready ids the
// first that merges cleanly is taken; when none does, the order stops and the first ready
// one's conflict is returned.
func (r Repo) MergeOrder(ctx context.Context, base string, order []string, branch map[string]string, deps map[string][]string, ident []string) ([]string, *OrderConflict, error) {
	cur, err := r.git(ctx, "rev-parse", "refs/heads/"+base)
	if err != nil {
		return nil, nil, err
	}
	if len(order) >= commitGraphFrom {
		r.writeCommitGraph(ctx)
	}
	merged := map[string]bool{}
	inOrder := map[string]bool{}
	for _, id := range order {
		inOrder[id] = true
	}
	out := []string{}
	for len(out) < len(order) {
		var first *OrderConflict
		took := false
		for _, id := range order {
			if merged[id] || !depsMerged(deps[id], merged, inOrder) {
				continue
			}
			tree, files, err := r.mergeTree(ctx, cur, branch[id])
			if err != nil {
				return out, nil, err
			}
			if files != nil {
				if first == nil {
					first = &OrderConflict{ID: id, Branch: branch[id], Files: files}
				}
				continue
			}
			c, err := r.git(ctx, append(append([]string{}, ident...), "commit-tree", tree, "-p", cur, "-p", "refs/heads/"+branch[id], "-m", "merge order check")...)
			if err != nil {
				return out, nil, err
			}
			cur = c
			merged[id] = true
			out = append(out, id)
			if len(out)%commitGraphFrom == 0 {
				// The merges made so far join the graph too: the next walks cross them there.
				r.writeCommitGraphOf(ctx, cur)
			}
			took = true
			break
		}
		if !took {
			return out, first, nil
		}
	}
	return out, nil, nil
}

// commitGraphFrom is how many branches a merge order must have before it writes the
// repository's commit-graph first: below it the walks are short.
const commitGraphFrom = 64

// writeCommitGraph adds the repository's commits to its commit-graph (an incremental layer,
// --split, as git maintenance writes it). Each merge-tree of a merge order walks from the
// merges made so far down to the merge base: without the graph every commit on that walk is
// inflated from its object, and the order's cost per branch grew with the run (git 2.39,
// BenchmarkMergeOrder: 9.6 ms a branch at 200, 32.8 at 1,000). With the branches in the graph,
// and the order's own merges added every commitGraphFrom (writeCommitGraphOf), it stays flat
// (9.6 and 9.1). The graph is a cache git keeps itself (git gc writes it too); a failure costs
// only speed.
func (r Repo) writeCommitGraph(ctx context.Context) {
	r.git(ctx, "commit-graph", "write", "--reachable", "--split")
}

// writeCommitGraphOf adds commit and the commits it reaches to the commit-graph (the merge
// order's merges, which no ref points at).
func (r Repo) writeCommitGraphOf(ctx context.Context, commit string) {
	Cmd{Dir: r.Dir, Stdin: commit + "\n"}.Run(ctx, "commit-graph", "write", "--stdin-commits", "--split")
}

// depsMerged says whether every dependency that is part of the order is merged already.
func depsMerged(deps []string, merged, inOrder map[string]bool) bool {
	for _, d := range deps {
		if inOrder[d] && !merged[d] {
			return false
		}
	}
	return true
}

// mergeTree merges branch onto commit cur without a worktree: the tree, or on a conflict the
// conflicting files (non-nil).
func (r Repo) mergeTree(ctx context.Context, cur, branch string) (tree string, files []string, err error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return "", nil, ErrNoGit
	}
	// Run directly: merge-tree prints the tree and the conflicts on stdout and exits 1 on a
	// conflict, which r.git would turn into an error without its output.
	cmd := exec.CommandContext(ctx, path, "-C", r.Dir, "merge-tree", "--write-tree", "--name-only", "--no-messages", cur, "refs/heads/"+branch)
	b, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var exit *exec.ExitError
	switch {
	case err == nil:
		return lines[0], nil, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		files = []string{}
		seen := map[string]bool{}
		for _, l := range lines[1:] {
			if l == "" {
				break
			}
			if !seen[l] {
				seen[l] = true
				files = append(files, l)
			}
		}
		return "", files, nil
	}
	msg := err.Error()
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		msg = strings.TrimSpace(string(exit.Stderr))
	}
	return "", nil, fmt.Errorf("git merge-tree: %s", msg)
}

// Since is what happened in the work tree since commit from: the commits made on top of it
// (oldest first) and the files changed since, committed or not, untracked ones included (not
// ignored ones), sorted. Nothing when from is "" or git cannot tell.
func (r Repo) Since(ctx context.Context, from string) (commits, files []string) {
	commits, files = []string{}, []string{}
	if from == "" || strings.HasPrefix(from, "-") {
		return commits, files
	}
	if out, err := r.git(ctx, "rev-list", "--reverse", from+"..HEAD"); err == nil && out != "" {
		commits = strings.Split(out, "\n")
	}
	seen := map[string]bool{}
	for _, args := range [][]string{{"diff", "--name-only", "-z", from}, {"ls-files", "-z", "--others", "--exclude-standard"}} {
		out, err := r.gitRaw(ctx, args...)
		if err != nil {
			continue
		}
		for _, f := range strings.Split(out, "\x00") {
			if f != "" && !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
	}
	sort.Strings(files)
	return commits, files
}

// gitRaw is git's stdout as it is (not trimmed: -z output).
func (r Repo) gitRaw(ctx context.Context, args ...string) (string, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return "", ErrNoGit
	}
	out, err := exec.CommandContext(ctx, path, append([]string{"-C", r.Dir}, args...)...).Output()
	return string(out), err
}
