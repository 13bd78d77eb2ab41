// Package breaker is ralph's no-progress breaker, for its three kinds of loop (swarm's loops,
// AIWG's loops, the queue's tasks): after N iterations in a row with no new commit and no
// change in the working tree, or N in a row that failed the same way (the same exit code and
// the same last lines of error output), the loop stops, reason no-progress.
package breaker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	gitx "github.com/agentfleet/fleet/internal/git"
)

// DefaultThreshold is N when the loop does not set one; 0 turns the breaker off.
const DefaultThreshold = 3

// Reason is the exit reason of a loop the breaker stopped.
const Reason = "no-progress"

// Observation is how one iteration ended.
type Observation struct {
	// Tree identifies the working tree after the iteration (Fingerprint): HEAD and every
	// file not ignored. "" when it cannot be told (not a git repository): the no-change rule
	// then does not count.
	Tree string
	// Failed: the iteration failed; Exit its exit code and Tail the last lines of its
	// output, which together say how.
	Failed bool
	Exit   int64
	Tail   string
}

// State is the breaker's count, kept in the loop's state between iterations.
type State struct {
	// Tree is the working tree as the last iteration left it (or the loop found it).
	Tree string `json:"tree"`
	// Unchanged counts the iterations in a row that left the tree as it was.
	Unchanged int `json:"unchanged"`
	// SameFailure counts the iterations in a row that failed the same way; Failure is how
	// (exit code and the hash of the last lines).
	SameFailure int    `json:"same_failure"`
	Failure     string `json:"failure"`
}

// Observe counts iteration o into s and reports whether the breaker opens with threshold n
// (n <= 0: never), and why.
func (s *State) Observe(o Observation, n int) (bool, string) {
	if o.Tree != "" && s.Tree != "" && o.Tree == s.Tree {
		s.Unchanged++
	} else {
		s.Unchanged = 0
	}
	if o.Tree != "" {
		s.Tree = o.Tree
	}
	if o.Failed {
		sum := sha256.Sum256([]byte(lastLines(o.Tail, 5)))
		how := fmt.Sprintf("exit %d %s", o.Exit, hex.EncodeToString(sum[:8]))
		if how == s.Failure {
			s.SameFailure++
		} else {
			s.Failure, s.SameFailure = how, 1
		}
	} else {
		s.Failure, s.SameFailure = "", 0
	}
	switch {
	case n <= 0:
		return false, ""
	case s.Unchanged >= n:
		return true, fmt.Sprintf("%d iterations in a row made no commit and changed no file", s.Unchanged)
	case s.SameFailure >= n:
		return true, fmt.Sprintf("%d iterations in a row failed the same way (%s)", s.SameFailure, strings.SplitN(s.Failure, " ", 3)[:2])
	}
	return false, ""
}

// lastLines is the last n non-empty lines of text, trimmed.
func lastLines(text string, n int) string {
	var out []string
	ls := strings.Split(strings.ReplaceAll(text, "\r", "\n"), "\n")
	for i := len(ls) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimSpace(ls[i]); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// ErrNotGit is Fingerprint's error (wrapped, with the directory) outside a git working tree.
var ErrNotGit = errors.New("not in a git repository")

// Fingerprint identifies the working tree of the git repository at dir: HEAD and the tree of
// every file not ignored (git add -A into a copy of the index, git write-tree), the paths in
// exclude (relative to the top, as a loop's own state directory, or absolute: a directory
// outside the tree is ignored) left out. "" and an error outside git (errors.Is ErrNotGit).
// The fingerprint begins with HEAD's commit and a space (HEAD "" on an unborn branch): a caller
// that also needs HEAD takes it from there rather than asking git again.
func Fingerprint(ctx context.Context, dir string, exclude ...string) (string, error) {
	top, indexPath, head, err := locate(ctx, dir)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "ralph-breaker-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	index := filepath.Join(tmp, "index")
	if indexPath != "" {
		if b, err := os.ReadFile(indexPath); err == nil {
			os.WriteFile(index, b, 0o600) // its stat cache spares hashing unchanged files
		}
	}
	// The copy of the index, so that the user's index is left as it is.
	copyIndex := gitx.Cmd{Dir: top, Env: []string{"GIT_INDEX_FILE=" + index}}
	args := []string{"add", "-A", "--", "."}
	for _, x := range exclude {
		if filepath.IsAbs(x) {
			if real, err := filepath.EvalSymlinks(x); err == nil {
				x = real
			}
			rel, err := filepath.Rel(top, x)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				continue // not in the tree
			}
			x = rel
		}
		args = append(args, ":(exclude)"+x)
	}
	if _, err := copyIndex.Run(ctx, args...); err != nil {
		return "", err
	}
	tree, err := copyIndex.Output(ctx, "write-tree")
	if err != nil {
		return "", err
	}
	return head + " " + tree, nil
}

// locate asks git, in one process, for dir's working tree top, its index's absolute path and
// HEAD's commit ("" on an unborn branch): before, these were three git processes, and the queue
// fingerprints the tree before every attempt (issue 16's benchmark: each git process is some
// milliseconds of a task's launch on a loaded machine). A git that does not answer in the
// expected shape (one older than 2.31 has no --path-format) is asked the three questions one
// by one, as before.
func locate(ctx context.Context, dir string) (top, index, head string, err error) {
	in := gitx.Cmd{Dir: dir}
	git := func(args ...string) (string, error) { return in.Output(ctx, args...) }
	out, err := in.Run(ctx, "rev-parse", "--show-toplevel", "--path-format=absolute", "--git-path", "index", "-q", "--verify", "HEAD")
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	code := gitx.ExitCode(err)
	switch {
	case err == nil && len(lines) == 3 && filepath.IsAbs(lines[1]):
		return lines[0], lines[1], lines[2], nil
	case code == 1 && len(lines) == 2 && filepath.IsAbs(lines[1]):
		return lines[0], lines[1], "", nil // HEAD names no commit yet
	case code == 128 && len(out) == 0:
		return "", "", "", fmt.Errorf("%s is %w", dir, ErrNotGit)
	}
	if top, err = git("rev-parse", "--show-toplevel"); err != nil {
		return "", "", "", fmt.Errorf("%s is %w", dir, ErrNotGit)
	}
	head, _ = git("rev-parse", "-q", "--verify", "HEAD")
	index, _ = git("rev-parse", "--path-format=absolute", "--git-path", "index")
	return top, index, head, nil
}
