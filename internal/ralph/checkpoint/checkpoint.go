// Package checkpoint is ralph's --commit-each: after an iteration, every change of the loop's
// working tree committed with trailers that name the loop and the iteration. The same commit for
// every kind of loop (swarm's, AIWG's), so that `git log --grep Ralph-Loop:` reads them alike.
package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	gitx "github.com/agentfleet/fleet/internal/git"
)

// Commit is --commit-each's git checkpoint: every change of the working tree at dir (git add
// -A, the paths of exclude under dir left out) committed with trailers naming the loop and the
// iteration:
//
//	ralph: <loop>, iteration <n>
//
//	Ralph-Loop: <loop>
//	Ralph-Iteration: <n>
//
// No change, no commit: it returns "". A repository with no identity configured gets
// ralph@localhost.
func Commit(ctx context.Context, dir string, exclude []string, loop string, n int) (string, error) {
	add := []string{"add", "-A", "--", "."}
	for _, p := range exclude {
		rel, ok := under(dir, p)
		if !ok {
			continue
		}
		// A path the repository ignores is left out by add already, and naming it, even to
		// exclude it, makes add fail ("paths are ignored by one of your .gitignore files").
		if _, err := gitx.Run(ctx, dir, "", "check-ignore", "-q", "--", filepath.ToSlash(rel)); err == nil {
			continue
		}
		add = append(add, ":(exclude)"+filepath.ToSlash(rel))
	}
	if _, err := gitx.Run(ctx, dir, "", add...); err != nil {
		return "", err
	}
	if _, err := gitx.Run(ctx, dir, "", "diff", "--cached", "--quiet"); err == nil {
		return "", nil
	}
	msg := fmt.Sprintf("ralph: %s, iteration %d\n\nRalph-Loop: %s\nRalph-Iteration: %s\n", loop, n, loop, strconv.Itoa(n))
	args := []string{"commit", "-q", "-F", "-"}
	if out, _ := gitx.Run(ctx, dir, "", "config", "user.email"); len(bytes.TrimSpace(out)) == 0 {
		args = append([]string{"-c", "user.name=ralph", "-c", "user.email=ralph@localhost"}, args...)
	}
	if _, err := gitx.Run(ctx, dir, msg, args...); err != nil {
		return "", err
	}
	head, err := gitx.Run(ctx, dir, "", "rev-parse", "HEAD")
	return strings.TrimSpace(string(head)), err
}

// under says whether path is below dir, and where relative to it, links resolved in both (a
// state directory reached through a link is still inside the tree git sees).
func under(dir, path string) (string, bool) {
	rd, err1 := filepath.EvalSymlinks(dir)
	rp, err2 := filepath.EvalSymlinks(path)
	if err1 != nil || err2 != nil {
		rd, rp = filepath.Clean(dir), filepath.Clean(path)
	}
	rel, err := filepath.Rel(rd, rp)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// ObjectName reports whether s is a full git object name (40 hex digits, or 64 in a SHA-256
// repository): a start read back from a file becomes a git argument only when it is one, so that
// it can be neither an option nor a name git would resolve (a branch, HEAD~3).
func ObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// CheckStart refuses a revert to start in the working tree at dir unless start is a full
// object name of a commit that HEAD descends from: `abort --revert` resets the branch to it,
// and a start the loop's commits do not descend from would take the branch somewhere else
// (past commits of the user's, onto another line of history).
func CheckStart(ctx context.Context, dir, start string) error {
	if !ObjectName(start) {
		return fmt.Errorf("the loop's start %q is not a commit's full name", start)
	}
	if _, err := gitx.Run(ctx, dir, "", "cat-file", "-e", start+"^{commit}"); err != nil {
		return fmt.Errorf("the loop's start %s is not a commit of %s", start, dir)
	}
	_, err := gitx.Run(ctx, dir, "", "merge-base", "--is-ancestor", start, "HEAD")
	if err != nil {
		return fmt.Errorf("HEAD of %s does not descend from the loop's start %s (the branch was moved off it)", dir, start)
	}
	return nil
}
