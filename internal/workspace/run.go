package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Time limits. dispatch.sh waited for its hooks without one; a hook that hangs must not keep a
// launch or a supervisor for ever.
const (
	// HookTimeout bounds every script but verify.sh.
	HookTimeout = time.Minute
	// VerifyTimeout bounds verify.sh, which runs the repository's tests (each runner under its
	// own limit of 120 or 300 s).
	VerifyTimeout = 10 * time.Minute
	// RelayTimeout bounds each relay command.
	RelayTimeout = 10 * time.Second
)

// ErrTimeout is returned by Command.Run when the command did not finish in time (it is killed).
var ErrTimeout = errors.New("did not finish in time")

// Command is one run of a script or binary: an argv, never a shell line.
type Command struct {
	Path string
	Args []string
	Dir  string   // "": this process's
	Env  []string // nil: this process's
	// Stdout and Stderr receive its output; nil discards it.
	Stdout, Stderr io.Writer
	Timeout        time.Duration // 0: HookTimeout
}

// Run runs the command and returns its exit status as a shell reports it (128+N after signal
// N). err is set only when it could not be run or did not finish in time (ErrTimeout): then it
// and every process of its group are killed.
func (c *Command) Run(ctx context.Context) (int, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = HookTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	code, err := c.run(ctx, c.Path, c.Args)
	if errors.Is(err, syscall.ENOEXEC) {
		// A script without a #! line: the shell ran it as a shell script, and so does execvp.
		code, err = c.run(ctx, "/bin/sh", append([]string{c.Path}, c.Args...))
	}
	if err != nil && ctx.Err() != nil {
		return code, fmt.Errorf("%s %w (%s)", filepath.Base(c.Path), ErrTimeout, timeout)
	}
	return code, err
}

func (c *Command) run(ctx context.Context, path string, args []string) (int, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	cmd.Stdout, cmd.Stderr = c.Stdout, c.Stderr
	// Its own process group, so that a timeout stops what it started too (a test runner's
	// children, node under wake-gateway.sh).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A child it left in the background may hold its output open: do not wait for that.
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	// ProcessState is there whenever it ran, even if copying its output failed or was cut
	// short by WaitDelay: its exit status is still its verdict.
	if st := cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return st.ExitCode(), nil
	}
	return -1, err
}

// capture is a buffer that keeps the first limit bytes written to it and drops the rest: a
// hook's output kept in memory is bounded.
type capture struct {
	buf   bytes.Buffer
	limit int
}

func (c *capture) Write(p []byte) (int, error) {
	if room := c.limit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
