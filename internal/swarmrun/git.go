package swarmrun

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	// Named apart: the package tests have a helper called git.
	gitx "github.com/agentfleet/fleet/internal/git"
)

// gitCmd runs git in dir and returns its trimmed stdout; a failure names the command and
// git's reason (gitx.Error). No git of a run asks for a password on the terminal.
// Identity comes from the user's config; a repository without one gets the toolkit's
// (identityFor), so that the run's merge and trailer commits never fail on "Please tell me who
// you are".
func gitCmd(ctx context.Context, dir string, args ...string) (string, error) {
	return gitx.Cmd{Dir: dir, Env: []string{"GIT_TERMINAL_PROMPT=0"}}.Output(ctx, args...)
}

// identityFor is what a commit command in dir is prefixed with: nothing when the repository
// has an identity configured, else swarm run's. A run asks once (worktrees share the
// repository's config).
func identityFor(ctx context.Context, dir string) []string {
	return gitx.Repo{Dir: dir}.Identity(ctx, "swarm run", "swarm-run@localhost")
}

// refNames is the set of the repository's refs, full names (refs/heads/main, refs/tags/v1),
// from one git command: a run of thousands of tasks checks their branches against it, where a
// rev-parse per branch took a process each.
func refNames(ctx context.Context, dir string) (map[string]bool, error) {
	out, err := gitCmd(ctx, dir, "for-each-ref", "--format=%(refname)")
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	// A ref's name holds no white space (git check-ref-format).
	for _, ref := range strings.Fields(out) {
		set[ref] = true
	}
	return set, nil
}

// Trailers are the commit trailers every task's commit carries.
func trailers(execID, taskID, agentID string) []string {
	return []string{"Swarm-Execution-ID: " + execID, "Swarm-Task-ID: " + taskID, "Swarm-Agent: " + agentID}
}

// worktreeStatus is what one git status says of a task's worktree after its agent: HEAD's
// commit and branch, whether the agent left changes, and whether files git ignores are there
// (which the worktree's re-pointing for the slot's next task removes). branch is HEAD's branch
// by its name below refs/heads/, or "(detached)", which no task's branch can be named
// (manifest.CheckBranch allows no parentheses).
type worktreeStatus struct {
	head, branch     string
	changed, ignored bool
}

// readStatus is one git status of the worktree wt: "# branch.oid SHA", "# branch.head NAME",
// then a line per change, "! PATH" per ignored file (or directory matching a pattern, not
// looked into).
func readStatus(ctx context.Context, wt string) (worktreeStatus, error) {
	var ws worktreeStatus
	out, err := gitCmd(ctx, wt, "status", "--porcelain=v2", "--branch", "--untracked-files=all", "--ignored=matching")
	if err != nil {
		return ws, err
	}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "# branch.oid "):
			ws.head = strings.TrimPrefix(line, "# branch.oid ")
		case strings.HasPrefix(line, "# branch.head "):
			ws.branch = strings.TrimPrefix(line, "# branch.head ")
		case strings.HasPrefix(line, "! "):
			ws.ignored = true
		case line != "" && !strings.HasPrefix(line, "#"):
			ws.changed = true
		}
	}
	if ws.head == "" || ws.head == "(initial)" {
		return ws, fmt.Errorf("git status in %s names no HEAD commit", wt)
	}
	return ws, nil
}

// commitTask makes the task's commit in its worktree, carrying the trailers: what the agent
// left uncommitted is committed; else the agent's last commit is given the trailers (amended,
// its author kept) unless it has them; else (no change at all) an empty commit records that
// the task ran. ws is the worktree's git status read before (readStatus; read here when it is
// none), ident what prefixes the commit commands (identityFor). It returns the commit's SHA.
// The commits are git commit's, so the repository's commit hooks run and commit.gpgSign signs
// them; a hook that refuses the commit fails the task with its message. The empty commit is
// the exception when full is false (commitAsks: no signing, no commit hook): it is then made
// with commit-tree, which runs no hook and would not sign.
// An agent that changed nothing costs three git processes (status, commit-tree, update-ref),
// one that left changes four (status, add, commit, rev-parse): the trailers are written in the
// message itself, as --trailer would add them to a one-line message, without the
// interpret-trailers process --trailer starts.
func commitTask(ctx context.Context, wt string, ws worktreeStatus, baseSHA, execID, taskID, agentID, title string, ident []string, full bool) (string, error) {
	if ws.head == "" {
		var err error
		if ws, err = readStatus(ctx, wt); err != nil {
			return "", err
		}
	}
	tr := trailers(execID, taskID, agentID)
	// No git maintenance run --auto after each commit, a process of its own per task: the
	// repository's housekeeping is not the run's to do.
	pre := append(append([]string{}, ident...), "-c", "maintenance.auto=false", "-c", "gc.auto=0")
	trailerBlock := strings.Join(tr, "\n")
	commit := func(args ...string) (string, error) {
		if _, err := gitCmd(ctx, wt, append(pre, append([]string{"commit", "--quiet"}, args...)...)...); err != nil {
			return "", err
		}
		return gitCmd(ctx, wt, "rev-parse", "HEAD")
	}
	switch {
	case ws.changed:
		if _, err := gitCmd(ctx, wt, "add", "-A"); err != nil {
			return "", err
		}
		return commit("-m", title, "-m", trailerBlock)
	case ws.head != baseSHA:
		msg, _ := gitCmd(ctx, wt, "log", "-1", "--format=%B")
		if strings.Contains(msg, "Swarm-Task-ID: "+taskID) {
			return ws.head, nil
		}
		// The agent's own message: --trailer adds the trailers to its trailer block, as git
		// formats them.
		args := []string{"--amend", "--no-edit"}
		for _, t := range tr {
			args = append(args, "--trailer", t)
		}
		return commit(args...)
	case full:
		return commit("--allow-empty", "-m", title+" (no change)", "-m", trailerBlock)
	}
	// Nothing changed: the empty commit is made from HEAD's tree (the index and the files
	// stay as they are) and HEAD, through the branch it names, moved onto it, if it is still
	// where status saw it.
	sha, err := gitCmd(ctx, wt, append(append([]string{}, ident...), "commit-tree", ws.head+"^{tree}", "-p", ws.head, "-m", title+" (no change)", "-m", trailerBlock)...)
	if err != nil {
		return "", err
	}
	if _, err := gitCmd(ctx, wt, "update-ref", "-m", "commit: "+title+" (no change)", "HEAD", sha, ws.head); err != nil {
		return "", err
	}
	return sha, nil
}

// commitAsks says whether the repository at dir asks of a commit what only git commit gives:
// commit.gpgSign set, or one of the hooks of git commit installed (an executable file in core.hooksPath,
// taken from the worktree's top as git runs hooks there, or else the repository's hooks
// directory). A run asks once; the task's worktrees share the repository's config and hooks.
func commitAsks(ctx context.Context, dir string) bool {
	sign, err := gitCmd(ctx, dir, "config", "--type=bool", "--get", "commit.gpgSign")
	// The hooks git commit runs (githooks(5)), looked for when it does not sign; commit-tree
	// runs none.
	return err == nil && sign == "true" || gitx.Repo{Dir: dir}.HasHook(ctx, "pre-commit", "prepare-commit-msg", "commit-msg", "post-commit")
}

// mergeOrder is a topological order of the tasks in order in which every branch merges cleanly
// onto the base and the branches before it (gitx.Repo.MergeOrder), and the first conflict
// that stops it.
func mergeOrder(ctx context.Context, repo, base string, order []string, branch map[string]string, deps map[string][]string) ([]string, *MergeConflict, error) {
	mo, c, err := gitx.Repo{Dir: repo}.MergeOrder(ctx, base, order, branch, deps, identityFor(ctx, repo))
	if c == nil {
		return mo, nil, err
	}
	return mo, &MergeConflict{TaskID: c.ID, Branch: c.Branch, Files: c.Files,
		Message: fmt.Sprintf("%s conflicts with the branches merged before it in %s", c.Branch, strings.Join(c.Files, ", "))}, err
}

// claimBranch decides how task t's branch is made: reset (git worktree add -B) when this
// execution made it already (branches_made), else created (-b, newBranch true). Before a
// branch is created it is written to branches_made and the state flushed, so that a run killed
// meanwhile leaves no branch of its own that a resume would take for the user's; a branch that
// exists and the execution did not make is the user's, and is an error, never reset.
func (r *runner) claimBranch(ctx context.Context, t *Task) (newBranch bool, err error) {
	r.mu.Lock()
	at, ahead := r.claimedAt[t.ID]
	delete(r.claimedAt, t.ID)
	made := slices.Contains(r.st.BranchesMade, t.Branch)
	if !ahead && !made && r.refsAtStart == nil {
		// The refs are read once for the run (one git process, where a rev-parse per task was
		// one each): a branch made by someone else after that is found by git, which refuses
		// to create it (gitx.ErrBranchExists, unclaimBranch).
		r.refsAtStart = sync.OnceValues(func() (map[string]bool, error) { return refNames(context.WithoutCancel(ctx), r.cfg.Repo) })
	}
	refs := r.refsAtStart
	r.mu.Unlock()
	switch {
	case ahead:
		// Claimed with the task's assignment (claimAhead): the write that named the
		// assignment names the branch too.
		err = r.flushSince(at)
	case made:
		return false, nil
	default:
		set, rerr := refs()
		if rerr != nil {
			return false, rerr
		}
		if set["refs/heads/"+t.Branch] {
			return false, r.userBranchError(t)
		}
		r.mu.Lock()
		r.refs = set
		r.st.BranchesMade = append(r.st.BranchesMade, t.Branch)
		r.mu.Unlock()
		err = r.flush()
	}
	if err != nil {
		return false, fmt.Errorf("writing the state before making branch %s: %w", t.Branch, err)
	}
	return true, nil
}

// claimAhead claims task t's branch with its assignment (under mu), once the run has read the
// refs (claimBranch): written to branches_made in the same state change, so that one write names
// both where each cost a write of the whole state before the task's branch could be made. A
// branch the refs name is not claimed: claimBranch refuses it.
func (r *runner) claimAhead(t *Task) {
	if r.refs == nil || r.adopt[t.ID] > 0 || r.refs["refs/heads/"+t.Branch] || slices.Contains(r.st.BranchesMade, t.Branch) {
		return
	}
	r.st.BranchesMade = append(r.st.BranchesMade, t.Branch)
	if r.claimedAt == nil {
		r.claimedAt = map[string]uint64{}
	}
	// A write whose state was taken after this change has a generation above the current one
	// (flush counts the change it writes before it takes the state).
	r.claimedAt[t.ID] = r.gen + 1
}

// unclaimBranch takes t's branch out of branches_made again: git found it made by someone
// else meanwhile (gitx.ErrBranchExists). It returns the error the task fails with.
func (r *runner) unclaimBranch(t *Task, cause error) error {
	r.mu.Lock()
	r.st.BranchesMade = slices.DeleteFunc(r.st.BranchesMade, func(b string) bool { return b == t.Branch })
	r.mu.Unlock()
	if err := r.flush(); err != nil {
		return fmt.Errorf("%v; writing the state: %w", cause, err)
	}
	return r.userBranchError(t)
}

// userBranchError is a task's branch that exists and that the execution did not make. Not
// under mu: the state's execution id is set before any task runs, and never changes.
func (r *runner) userBranchError(t *Task) error {
	return fmt.Errorf("branch %q of task %q exists, and execution %s did not make it: it is left as it is; delete it (git branch -D %s) or give the task another branch, then 'swarm run --retry %s'", t.Branch, t.ID, r.st.ExecutionID, t.Branch, t.ID)
}
