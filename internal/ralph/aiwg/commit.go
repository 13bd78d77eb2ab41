package aiwg

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// CommitIteration is --commit-each's git checkpoint: every change of the working tree at dir
// (git add -A, the paths of exclude under dir left out) committed with trailers naming the
// loop and the iteration, as swarm's loops' --commit-each writes them:
//
//	ralph: <loop>, iteration <n>
//
//	Ralph-Loop: <loop>
//	Ralph-Iteration: <n>
//
// No change, no commit: it returns "". A repository with no identity configured gets
// ralph@localhost. It depends on nothing of the loop's kind, so it can move to a package both
// kinds share.
func CommitIteration(ctx context.Context, dir string, exclude []string, loop string, n int) (string, error) {
	add := []string{"add", "-A", "--", "."}
	for _, p := range exclude {
		if rel, err := filepath.Rel(dir, p); err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
			add = append(add, ":(exclude)"+filepath.ToSlash(rel))
		}
	}
	if _, err := gitInput(ctx, dir, "", add...); err != nil {
		return "", err
	}
	if _, err := gitInput(ctx, dir, "", "diff", "--cached", "--quiet"); err == nil {
		return "", nil
	}
	msg := fmt.Sprintf("ralph: %s, iteration %d\n\nRalph-Loop: %s\nRalph-Iteration: %s\n", loop, n, loop, strconv.Itoa(n))
	args := []string{"commit", "-q", "-F", "-"}
	if out, _ := gitInput(ctx, dir, "", "config", "user.email"); len(bytes.TrimSpace(out)) == 0 {
		args = append([]string{"-c", "user.name=ralph", "-c", "user.email=ralph@localhost"}, args...)
	}
	if _, err := gitInput(ctx, dir, msg, args...); err != nil {
		return "", err
	}
	head, err := gitInput(ctx, dir, "", "rev-parse", "HEAD")
	return strings.TrimSpace(string(head)), err
}

// gitInput runs git in dir with stdin on its input; its error carries git's stderr.
func gitInput(ctx context.Context, dir, stdin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
