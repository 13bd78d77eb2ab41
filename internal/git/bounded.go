package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// maxStderr bounds what is kept of git's diagnostics by OutputBounded.
const maxStderr = 16 << 10

// OutputBounded runs git as Run does, and reads at most limit bytes of what it prints: past
// them git is killed and cut is true, with the first limit bytes and no error. For output whose
// size is the repository's to decide (a diff, a list of files): an agent's worktree may hold a
// vendored tree or a file of gigabytes. A failure is an *Error as Run's, with what was read.
func (c Cmd) OutputBounded(ctx context.Context, limit int64, args ...string) (out []byte, cut bool, err error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return nil, false, ErrNoGit
	}
	argv := args
	if c.Dir != "" {
		argv = append([]string{"-C", c.Dir}, args...)
	}
	ctx, kill := context.WithCancel(ctx)
	defer kill()
	cmd := exec.CommandContext(ctx, path, argv...)
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	if c.Stdin != "" {
		cmd.Stdin = strings.NewReader(c.Stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &capped{w: &stderr, left: maxStderr}
	cmd.WaitDelay = max(c.WaitDelay, time.Second)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, err
	}
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("%w (%v)", ErrNoGit, err)
	}
	out, rerr := io.ReadAll(io.LimitReader(pipe, limit+1))
	if int64(len(out)) > limit {
		// The rest is not read: git is stopped rather than waited for.
		out, cut = out[:limit], true
		kill()
	}
	werr := cmd.Wait()
	switch {
	case cut:
		return out, true, nil
	case werr != nil:
		code := -1
		var exit *exec.ExitError
		if errors.As(werr, &exit) && ctx.Err() == nil {
			code = exit.ExitCode()
		}
		return out, false, &Error{Args: args, Code: code, Stderr: strings.TrimSpace(stderr.String()), Err: werr}
	case rerr != nil:
		return out, false, rerr
	}
	return out, false, nil
}

// capped writes the first left bytes to w and drops the rest (reporting them written: git
// must not fail on its stderr).
type capped struct {
	w    io.Writer
	left int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.left > 0 {
		k := min(len(p), c.left)
		c.w.Write(p[:k])
		c.left -= k
	}
	return len(p), nil
}
