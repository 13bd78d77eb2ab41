// Package tmux drives a tmux server through its command line, on a socket of the caller's
// choosing so that the toolkit's sessions never mix with a user's own. It needs tmux 3.2 or
// later (new-session -e, copy-mode -q) and is tested against 3.3a. The server still reads the
// user's tmux.conf, which is why PaneDead exists (remain-on-exit).
//
// Targets are always exact: tmux matches a bare session name as a prefix ("agent-bd-1" would
// find "agent-bd-10"), so a session is targeted as "=name", and a pane through a Target made by
// SessionTarget ("=name:") or WindowTarget ("=name:=window").
//
// Nothing passed is interpreted: programs are run from an argument vector, never a shell; text
// is typed with send-keys -l; and what tmux itself would read (a final ';' in any argument, a
// format in a name or directory) is escaped. Each such tmux quirk, and each message tmux prints
// as a server shuts down, lives in a small pure function in quirks.go with a table test.
package tmux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ErrNoTmux is returned when the tmux binary cannot be found.
var ErrNoTmux = errors.New("tmux is not installed (or not on PATH); install it, or pass --no-tmux to run agents as background processes")

// ErrGone is matched (errors.Is) by an error from a command whose target is not there: no
// server on the socket, no such session, window or pane, or a server that exited while the
// command ran.
var ErrGone = errors.New("no such tmux session, window or pane")

// ErrExists is matched (errors.Is) by an error from creating a session or window whose name is
// already taken.
var ErrExists = errors.New("tmux session or window already exists")

// Client runs tmux commands against one server socket.
type Client struct {
	// Socket is the server's socket path (tmux -S); empty means tmux's default server.
	Socket string
	// Run executes tmux with args and returns its stdout; tests and remote hosts replace it.
	// nil means the local tmux binary.
	Run func(ctx context.Context, args ...string) ([]byte, error)
}

// exact turns a session name into a target that matches only that session.
func exact(session string) string { return "=" + session }

func (c *Client) run(ctx context.Context, args ...string) ([]byte, error) {
	full := make([]string, 0, len(args)+2)
	if c.Socket != "" {
		full = append(full, "-S", c.Socket)
	}
	for _, a := range args {
		full = append(full, escapeArg(a))
	}
	args = full
	if c.Run != nil {
		return c.Run(ctx, args...)
	}
	path, err := exec.LookPath("tmux")
	if err != nil {
		return nil, ErrNoTmux
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	msg := strings.TrimSpace(stderr.String())
	switch {
	case err != nil && ctx.Err() != nil:
		return stdout.Bytes(), fmt.Errorf("tmux %s: %w", strings.Join(args, " "), ctx.Err())
	case err != nil:
		if msg == "" {
			msg = err.Error()
		}
		return stdout.Bytes(), &Error{Args: args, Msg: msg}
	case msg != "" && classify(msg) == gone:
		// tmux 3.3a can exit 0 having printed "no current target" when a kill-server
		// overtakes the command (capture-pane: 75 of 900 runs): the command did not run.
		return stdout.Bytes(), &Error{Args: args, Msg: msg}
	}
	return stdout.Bytes(), nil
}

// Error is a tmux command that failed, with what tmux said.
type Error struct {
	Args []string // the arguments tmux ran with, after the binary's name
	Msg  string   // what tmux printed on stderr, or how it failed if it printed nothing

	silent bool // exited 0 without the output the command always prints
}

// Error returns the command and what tmux said.
func (e *Error) Error() string { return "tmux " + strings.Join(e.Args, " ") + ": " + e.Msg }

// Is reports whether what tmux said means ErrGone or ErrExists.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrGone:
		return e.silent || classify(e.Msg) == gone
	case ErrExists:
		return classify(e.Msg) == exists
	}
	return false
}

// noServer reports whether err says the server, session, window or pane is not there, which
// for queries means "nothing there" and for kills "already done" rather than a failure.
func noServer(err error) bool { return errors.Is(err, ErrGone) }

// HasSession reports whether the session exists.
func (c *Client) HasSession(ctx context.Context, session string) (bool, error) {
	_, err := c.run(ctx, "has-session", "-t", exact(session))
	if err == nil {
		return true, nil
	}
	if noServer(err) {
		return false, nil
	}
	return false, err
}

// NewSession starts a detached session running argv in dir and returns the pid of the pane's
// process. argv is passed to tmux as separate arguments, which tmux executes directly, without
// a shell, so nothing in it is ever interpreted (run protects a final ';', and the session name
// and dir are kept from format expansion). env entries ("K=V") are set in the session.
// Everything passed must fit in tmux's 16 KiB command message ("command too long"): pass a long
// prompt in a file.
func (c *Client) NewSession(ctx context.Context, session, dir string, env []string, argv ...string) (int, error) {
	if err := checkName(sessionName, session); err != nil {
		return 0, err
	}
	args := []string{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", escapeFormat(session), "-c", escapeFormat(dir)}
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	// A bare "--" keeps an argv whose first word starts with "-" from being read as a flag.
	args = append(args, "--")
	args = append(args, argv...)
	start := time.Now()
	for attempt := 1; ; attempt++ {
		pid, err := c.newPane(ctx, args)
		// tmux 3.3a hands a command sent just after the last session ended to the exiting
		// server, which drops it with "server exited unexpectedly" (55 to 103 of 400
		// new-sessions right after a kill-session, here): nothing was created, and the next
		// attempt starts a new server. A kill-server that overtakes new-session makes it exit
		// 0 having printed nothing: whatever it created went with the server.
		if err == nil || !errors.Is(err, ErrGone) || time.Since(start) >= createWait {
			return pid, err
		}
		if err := pause(ctx, attempt); err != nil {
			return 0, err
		}
	}
}

// createWait is how long a new session or window is tried again while servers exit under it:
// a time, not a number of attempts, since how long an exiting server takes to close its socket
// depends on the machine's load; generous, since it bounds a wait that ends when that happens.
const createWait = 10 * time.Second

// pause waits a little longer after each attempt (up to a tenth of a second), or until ctx ends.
func pause(ctx context.Context, attempt int) error {
	t := time.NewTimer(min(time.Duration(attempt)*10*time.Millisecond, 100*time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// newPane runs a new-session or new-window that prints "#{pane_pid}" and returns the pid.
func (c *Client) newPane(ctx context.Context, args []string) (int, error) {
	out, err := c.query(ctx, args...)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Errorf("tmux %s printed %q, not a pid", args[0], out)
	}
	return pid, nil
}

// query runs a command that always prints something when it runs. tmux 3.3a exits 0 having
// printed nothing when a kill-server overtakes the command (display-message -p: 212 of 900
// runs; new-session -P likewise): that is an error matching ErrGone, not an empty answer.
func (c *Client) query(ctx context.Context, args ...string) ([]byte, error) {
	out, err := c.run(ctx, args...)
	if err == nil && len(out) == 0 {
		return nil, &Error{Args: args, Msg: "printed nothing: the server exited before the command ran", silent: true}
	}
	return out, err
}

// KillSession ends the session; a session that is already gone is not an error.
func (c *Client) KillSession(ctx context.Context, session string) error {
	_, err := c.run(ctx, "kill-session", "-t", exact(session))
	if err != nil && noServer(err) {
		return nil
	}
	return err
}

// ListSessions returns the names of the sessions on the server (none when no server runs).
func (c *Client) ListSessions(ctx context.Context) ([]string, error) {
	out, err := c.run(ctx, "list-sessions", "-F", "#{session_name}")
	if err != nil {
		if noServer(err) {
			return nil, nil
		}
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	return strings.Split(strings.TrimRight(string(out), "\n"), "\n"), nil
}

// KillServer stops the server on the socket.
func (c *Client) KillServer(ctx context.Context) error {
	_, err := c.run(ctx, "kill-server")
	if err != nil && noServer(err) {
		return nil
	}
	return err
}

// AttachArgs is the command line a person runs to watch the session.
func (c *Client) AttachArgs(session string) []string {
	args := []string{"tmux"}
	if c.Socket != "" {
		args = append(args, "-S", c.Socket)
	}
	return append(args, "attach", "-t", exact(session))
}
