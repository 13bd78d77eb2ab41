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

// Cmd is how a git command is run, beyond its arguments: every git the toolkit runs goes
// through it (or Run), so that a failure reads the same everywhere and a missing git is
// ErrNoGit everywhere.
type Cmd struct {
	// Dir is the directory git works in (git -C Dir); "" leaves it in the process's own.
	Dir string
	// Env is added to the process's environment: GIT_TERMINAL_PROMPT=0, GIT_INDEX_FILE,
	// GIT_SSH_COMMAND.
	Env []string
	// Stdin is git's input ("" : none).
	Stdin string
	// Combined, when set, takes git's stdout and stderr both, as they come (remote's bounded
	// writer); Run then returns no output, and its error carries no stderr.
	Combined io.Writer
	// WaitDelay bounds the wait for git's output after it is killed (exec.Cmd.WaitDelay): a
	// child of git's (ssh) holding the pipes open would otherwise hold Run.
	WaitDelay time.Duration
}

// Error is a git command that ran and failed.
type Error struct {
	Args   []string // the arguments, without -C
	Code   int      // git's exit code; -1 when it was killed (the context ended)
	Stderr string   // what git wrote on stderr, trimmed
	Err    error    // the *exec.ExitError, or the context's error
}

// Error names the command and git's reason (Reason).
func (e *Error) Error() string {
	return "git " + strings.Join(e.Args, " ") + ": " + e.Reason()
}

func (e *Error) Unwrap() error { return e.Err }

// Reason is git's last line on stderr that is not advice ("hint: ..."), else how git ended.
func (e *Error) Reason() string {
	lines := strings.Split(e.Stderr, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "hint:") {
			return l
		}
	}
	return e.Err.Error()
}

// ExitCode is err's git exit code: 0 for nil, -1 when git did not run to an exit.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return -1
}

// Run runs git with args and returns what it printed on stdout, as it printed it (also on
// failure). Its error is an *Error, or ErrNoGit when git cannot be run at all.
func (c Cmd) Run(ctx context.Context, args ...string) ([]byte, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return nil, ErrNoGit
	}
	argv := args
	if c.Dir != "" {
		argv = append([]string{"-C", c.Dir}, args...)
	}
	cmd := exec.CommandContext(ctx, path, argv...)
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	if c.Stdin != "" {
		cmd.Stdin = strings.NewReader(c.Stdin)
	}
	cmd.WaitDelay = c.WaitDelay
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.Combined != nil {
		cmd.Stdout, cmd.Stderr = c.Combined, c.Combined
	}
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) && ctx.Err() == nil {
			// Found on PATH but not run (removed since, not executable): as good as missing.
			return nil, fmt.Errorf("%w (%v)", ErrNoGit, err)
		}
		code := -1
		if exit != nil {
			code = exit.ExitCode()
		}
		return stdout.Bytes(), &Error{Args: args, Code: code, Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	return stdout.Bytes(), nil
}

// Output is Run with its output trimmed of the surrounding white space (a name, a SHA, a list
// of lines).
func (c Cmd) Output(ctx context.Context, args ...string) (string, error) {
	out, err := c.Run(ctx, args...)
	return strings.TrimSpace(string(out)), err
}
