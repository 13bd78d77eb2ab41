package remote

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// DispatchArgs are the words of the host's dispatch for one attempt (after the program and
// its --state-dir): what dispatch --host and swarm run's per-host executor both ask of it.
type DispatchArgs struct {
	Branch                             string
	Force, NoContext, Worktree, NoTmux bool
	Verify                             string
	Timeout                            time.Duration // whole seconds; 0: none
	Bead, Repo, Agent, Template        string
}

// Argv is the command line: flags in a fixed order, then "--", the bead, the host's clone,
// the agent, "-" (the prompt on stdin) and the template when there is one.
func (d DispatchArgs) Argv() []string {
	var args []string
	if d.Branch != "" {
		args = append(args, "--branch", d.Branch)
	}
	for _, f := range []struct {
		on   bool
		flag string
	}{{d.Force, "--force"}, {d.NoContext, "--no-context"}, {d.Worktree, "--worktree"}, {d.NoTmux, "--no-tmux"}} {
		if f.on {
			args = append(args, f.flag)
		}
	}
	if d.Verify != "" {
		args = append(args, "--verify", d.Verify)
	}
	if d.Timeout > 0 {
		args = append(args, "--timeout", strconv.FormatInt(int64((d.Timeout+time.Second-1)/time.Second), 10))
	}
	args = append(args, "--", d.Bead, d.Repo, d.Agent, "-")
	if d.Template != "" {
		args = append(args, d.Template)
	}
	return args
}

// Attempt is one attempt of a bead run by the host's dispatch and followed to its end.
type Attempt struct {
	Args   DispatchArgs
	Prompt string
	// Env is more environment for the host's dispatch (its agent inherits it), beyond Conn.Env.
	Env         []string
	Out, ErrOut io.Writer // the host's dispatch's console lines and diagnostics
	Watch       Watch
	// Numbered, if set, is called with the attempt's number before it is started; what it
	// returns is added to Env.
	Numbered func(n int) []string
	// Started, if set, is called once the host's dispatch has returned (launched, refused or
	// its connection lost), before the wait.
	Started func()
}

// AttemptRun is what RunAttempt found: the attempt's number, when its start was sent (the
// host's supervisor's clock for --timeout starts after it), the host's dispatch's exit status
// (-1: not known), and the final snapshot.
type AttemptRun struct {
	Number    int
	Sent      time.Time
	StartCode int
	Snapshot  *Snapshot
	Result    *record.Result
}

// StartError is a host's dispatch that refused the attempt (a non-zero exit, the connection
// up): nothing runs there.
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// RunAttempt runs one attempt on the host: it reads the bead's last attempt there (the new
// one is the next; the read is a heartbeat, as the wait's are), starts the host's dispatch (a connection lost during the start is for the
// wait to judge: the host's dispatch may have launched it), and follows the bead there until
// its result is final. Its errors: *StartError, *OfflineError (the host stopped answering;
// the agent may still run there), ctx's. The AttemptRun is returned with every error once the
// attempt is numbered.
func (c *Conn) RunAttempt(ctx context.Context, a Attempt) (*AttemptRun, error) {
	bead := a.Args.Bead
	before, err := c.Snapshot(ctx, bead, OrDefault(a.Watch.OfflineAfter, 30*time.Second))
	if err != nil {
		return nil, err
	}
	if a.Watch.Heartbeat != nil {
		a.Watch.Heartbeat(time.Now(), before)
	}
	run := &AttemptRun{Number: 1, StartCode: -1}
	if prev, err := record.DecodeRun(before.Run); len(before.Run) > 0 && err == nil {
		run.Number = prev.Attempt + 1
	}
	env := a.Env
	if a.Numbered != nil {
		env = append(append([]string{}, env...), a.Numbered(run.Number)...)
	}
	run.Sent = time.Now()
	code, err := c.Start(ctx, a.Args.Argv(), env, a.Prompt, a.Out, a.ErrOut)
	run.StartCode = code
	if a.Started != nil {
		a.Started()
	}
	if err != nil && !errors.Is(err, ErrUnreachable) {
		if code > 0 {
			return run, &StartError{Code: code, Err: err}
		}
		return run, err
	}
	lost := time.Time{}
	if err != nil {
		lost = time.Now()
	}
	snap, err := c.wait(ctx, bead, run.Number, a.Watch, lost)
	if err != nil {
		return run, err
	}
	run.Snapshot = snap
	run.Result, _ = snap.Final(run.Number)
	return run, nil
}
