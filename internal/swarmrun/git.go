package swarmrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// gitCmd runs git in dir and returns its trimmed stdout; a failure carries git's stderr.
// Identity comes from the user's config; a repository without one gets the toolkit's, so that
// the run's merge and trailer commits never fail on "Please tell me who you are".
func gitCmd(ctx context.Context, dir string, args ...string) (string, error) {
	out, _, err := gitRun(ctx, dir, args...)
	return out, err
}

// gitRun is gitCmd that also returns git's exit code (-1 when it did not run).
func gitRun(ctx context.Context, dir string, args ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	err := cmd.Run()
	out := strings.TrimSpace(stdout.String())
	if err != nil {
		var exit *exec.ExitError
		code := -1
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return out, code, fmt.Errorf("git %s: %s", strings.Join(args, " "), firstLines(msg, 3))
	}
	return out, 0, nil
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "; ")
}

// identity is the committer the run's own commits use when the repository has none configured.
var identity = []string{"-c", "user.name=swarm run", "-c", "user.email=swarm-run@localhost"}

// identityFor is what a commit command in dir is prefixed with: nothing when the repository
// has an identity configured, else the toolkit's. A run asks once (worktrees share the
// repository's config).
func identityFor(ctx context.Context, dir string) []string {
	if name, _ := gitCmd(ctx, dir, "config", "user.email"); name != "" {
		return nil
	}
	return identity
}

// branchExists says whether refs/heads/b exists.
func branchExists(ctx context.Context, dir, b string) bool {
	_, err := gitCmd(ctx, dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+b)
	return err == nil
}

// conflictError is a merge of dependency branches that conflicts.
type conflictError struct {
	branch string
	files  []string
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("merging %s conflicts in %s", e.branch, strings.Join(e.files, ", "))
}

// prepareWorktree makes the task's worktree at path on branch, fresh from the commit base with
// each of deps' branches merged in (in order); ident prefixes the merge commands
// (identityFor). A worktree or branch left by an earlier attempt of the task is replaced:
// every attempt starts from the same commit. It returns that commit. Without dependencies it
// is one git command (base is the commit).
func prepareWorktree(ctx context.Context, repo, path, branch, base string, deps []string, ident []string) (string, error) {
	if exists(path) {
		if _, err := gitCmd(ctx, repo, "worktree", "remove", "--force", path); err != nil {
			if err := os.RemoveAll(path); err != nil {
				return "", err
			}
			gitCmd(ctx, repo, "worktree", "prune")
		}
	}
	add := []string{"worktree", "add", "--quiet", "-B", branch, path, base}
	if _, err := gitCmd(ctx, repo, add...); err != nil {
		// A worktree of the task's that a killed run left half made (registered, locked
		// while initializing, its directory missing) is dropped, and the add tried again.
		gitCmd(ctx, repo, "worktree", "unlock", path)
		gitCmd(ctx, repo, "worktree", "prune")
		if _, err := gitCmd(ctx, repo, add...); err != nil {
			return "", err
		}
	}
	if len(deps) == 0 {
		return base, nil
	}
	for _, d := range deps {
		args := append(append([]string{}, ident...), "merge", "--no-ff", "--no-edit", "-m", "swarm run: merge "+d+" into "+branch, d)
		_, code, err := gitRun(ctx, path, args...)
		if err == nil {
			continue
		}
		files, _ := gitCmd(ctx, path, "diff", "--name-only", "--diff-filter=U")
		gitCmd(ctx, path, "merge", "--abort")
		if code == 1 && files != "" {
			return "", &conflictError{branch: d, files: strings.Fields(files)}
		}
		return "", err
	}
	return gitCmd(ctx, path, "rev-parse", "HEAD")
}

// Trailers are the commit trailers every task's commit carries.
func trailers(execID, taskID, agentID string) []string {
	return []string{"Swarm-Execution-ID: " + execID, "Swarm-Task-ID: " + taskID, "Swarm-Agent: " + agentID}
}

// noMaintenance keeps git commit from starting git maintenance run --auto after each commit,
// a process of its own per task: the repository's housekeeping is not the run's to do.
var noMaintenance = []string{"-c", "maintenance.auto=false", "-c", "gc.auto=0"}

// commitTask makes the task's commit in its worktree, carrying the trailers: what the agent
// left uncommitted is committed; else the agent's last commit is given the trailers (amended,
// its author kept) unless it has them; else (no change at all) an empty commit records that
// the task ran. ident prefixes the commit commands (identityFor). It returns the commit's SHA.
// An agent that changed nothing costs three git processes (status, commit-tree, update-ref),
// one that left changes four (status, add, commit, rev-parse): the trailers are written in the
// message itself, as --trailer would add them to a one-line message, without the
// interpret-trailers process --trailer starts.
func commitTask(ctx context.Context, wt, baseSHA, execID, taskID, agentID, title string, ident []string) (string, error) {
	tr := trailers(execID, taskID, agentID)
	// One command for both the changes and HEAD: "# branch.oid SHA", then a line per change.
	out, err := gitCmd(ctx, wt, "status", "--porcelain=v2", "--branch", "--untracked-files=all")
	if err != nil {
		return "", err
	}
	head, changed := "", false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "# branch.oid "):
			head = strings.TrimPrefix(line, "# branch.oid ")
		case line != "" && !strings.HasPrefix(line, "#"):
			changed = true
		}
	}
	if head == "" || head == "(initial)" {
		return "", fmt.Errorf("git status in %s names no HEAD commit", wt)
	}
	pre := append(append([]string{}, ident...), noMaintenance...)
	trailerBlock := strings.Join(tr, "\n")
	switch {
	case changed:
		if _, err := gitCmd(ctx, wt, "add", "-A"); err != nil {
			return "", err
		}
		if _, err := gitCmd(ctx, wt, append(pre, "commit", "--quiet", "--no-verify", "-m", title, "-m", trailerBlock)...); err != nil {
			return "", err
		}
		return gitCmd(ctx, wt, "rev-parse", "HEAD")
	case head != baseSHA:
		msg, _ := gitCmd(ctx, wt, "log", "-1", "--format=%B")
		if strings.Contains(msg, "Swarm-Task-ID: "+taskID) {
			return head, nil
		}
		// The agent's own message: --trailer adds the trailers to its trailer block, as git
		// formats them.
		args := append(pre, "commit", "--quiet", "--no-verify", "--amend", "--no-edit")
		for _, t := range tr {
			args = append(args, "--trailer", t)
		}
		if _, err := gitCmd(ctx, wt, args...); err != nil {
			return "", err
		}
		return gitCmd(ctx, wt, "rev-parse", "HEAD")
	}
	// Nothing changed: the empty commit is made from HEAD's tree (the index and the files
	// stay as they are) and HEAD, through the branch it names, moved onto it, if it is still
	// where status saw it.
	sha, err := gitCmd(ctx, wt, append(append([]string{}, ident...), "commit-tree", head+"^{tree}", "-p", head, "-m", title+" (no change)", "-m", trailerBlock)...)
	if err != nil {
		return "", err
	}
	if _, err := gitCmd(ctx, wt, "update-ref", "-m", "commit: "+title+" (no change)", "HEAD", sha, head); err != nil {
		return "", err
	}
	return sha, nil
}

// mergeOrder is a topological order of the tasks in order (each after its dependencies, a
// task's own order kept otherwise) in which every branch merges cleanly onto the base and the
// branches before it, checked with git merge-tree --write-tree (nothing is checked out; the
// merges are commits no ref points at). Among the ready tasks the first that merges cleanly is
// taken; when none does, the order stops and the first ready one's conflict is named.
func mergeOrder(ctx context.Context, repo, base string, order []string, branch map[string]string, deps map[string][]string) ([]string, *MergeConflict, error) {
	cur, err := gitCmd(ctx, repo, "rev-parse", "refs/heads/"+base)
	if err != nil {
		return nil, nil, err
	}
	ident := identityFor(ctx, repo)
	merged := map[string]bool{}
	inOrder := map[string]bool{}
	for _, id := range order {
		inOrder[id] = true
	}
	out := []string{}
	for len(out) < len(order) {
		var first *MergeConflict
		took := false
		for _, id := range order {
			if merged[id] || !depsMerged(deps[id], merged, inOrder) {
				continue
			}
			tree, files, code, err := mergeTree(ctx, repo, cur, branch[id])
			if err != nil {
				return out, nil, err
			}
			if code != 0 {
				if first == nil {
					first = &MergeConflict{TaskID: id, Branch: branch[id], Files: files,
						Message: fmt.Sprintf("%s conflicts with the branches merged before it in %s", branch[id], strings.Join(files, ", "))}
				}
				continue
			}
			c, err := gitCmd(ctx, repo, append(append([]string{}, ident...), "commit-tree", tree, "-p", cur, "-p", "refs/heads/"+branch[id], "-m", "swarm run: merge order check")...)
			if err != nil {
				return out, nil, err
			}
			cur = c
			merged[id] = true
			out = append(out, id)
			took = true
			break
		}
		if !took {
			return out, first, nil
		}
	}
	return out, nil, nil
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

// mergeTree merges branch onto commit cur without a worktree: the tree, and on a conflict
// (exit 1) the conflicting files.
func mergeTree(ctx context.Context, repo, cur, branch string) (tree string, files []string, code int, err error) {
	out, code, err := gitRun(ctx, repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", cur, "refs/heads/"+branch)
	lines := strings.Split(out, "\n")
	switch code {
	case 0:
		return lines[0], nil, 0, nil
	case 1:
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
		return "", files, 1, nil
	}
	return "", nil, code, err
}
