package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	gitx "github.com/agentfleet/fleet/internal/git"
)

// gitTimeout bounds one push or fetch.
const gitTimeout = 5 * time.Minute

// remoteURL is the host's clone as git names it, in scp's form: the port and the identity go
// in GIT_SSH_COMMAND with the rest of our options.
func (c *Conn) remoteURL() string { return c.Host.SSH + ":" + c.Host.Repo }

// git runs git in the local repository with GIT_SSH_COMMAND set to our ssh through the master.
// Its output (the host's "remote:" lines among it) is read with the bound of a command's. A
// git that failed with the master gone (the host lost during a push or fetch: the master's
// ServerAlive checks gave up, and its clients with it) is ErrNoMaster, for the caller to judge
// the host, not the task.
func (c *Conn) git(ctx context.Context, repo string, args ...string) error {
	if err := c.master(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	runCtx, kill := context.WithCancel(ctx)
	defer kill()
	// GIT_SSH_COMMAND is read by a shell (git runs it with sh -c): each word quoted.
	sshCmd := Quote(append([]string{c.opts.ssh()}, c.ClientOptions()...)...)
	var out bytes.Buffer
	bounded := newBoundedWriter(&out, c.opts.maxOutput(), kill)
	_, err := gitx.Cmd{Dir: repo, Env: []string{"GIT_SSH_COMMAND=" + sshCmd, "GIT_TERMINAL_PROMPT=0"},
		Combined: bounded, WaitDelay: time.Second}.Run(runCtx, args...)
	// How git ended ("exit status 128"): what it said is in out, read by gitReason.
	var ge *gitx.Error
	if errors.As(err, &ge) {
		err = ge.Err
	}
	switch {
	case bounded.passedBound():
		return fmt.Errorf("host %s: git %s: %w (%s), and was stopped", c.Host.Name, strings.Join(args, " "), ErrOutputTooLarge, fsx.HumanBytes(c.opts.maxOutput()))
	case err != nil && ctx.Err() == nil && c.master() != nil:
		return fmt.Errorf("%w: %s: git %s: %s", ErrNoMaster, c.Host.Name, strings.Join(args, " "), gitReason(out.Bytes()))
	case err != nil:
		return fmt.Errorf("host %s: git %s: %v: %s", c.Host.Name, strings.Join(args, " "), err, gitReason(out.Bytes()))
	}
	return nil
}

// gitReason is the line of git's output that says why it failed: its first "fatal:",
// "error:" or rejected ref (git's last line is often advice such as "and the repository
// exists."), else the last line.
func gitReason(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		if l = Printable(l); strings.HasPrefix(l, "fatal:") || strings.HasPrefix(l, "error:") || strings.HasPrefix(l, "! [") {
			return l
		}
	}
	return lastLine(out)
}

func (c *Conn) master() error {
	if err := c.check(context.Background()); err != nil {
		return fmt.Errorf("%w: %s", ErrNoMaster, c.Host.Name)
	}
	return nil
}

// Push pushes the local branches to the same names in the host's clone (a task's base and the
// branches it depends on). A branch checked out there, or one that moved on there, is refused
// by git, and the error says so: nothing is forced. Pushes asked while one runs go together in
// the next (refBatch).
func (c *Conn) Push(ctx context.Context, repo string, branches ...string) error {
	var specs []string
	for _, b := range branches {
		specs = append(specs, "refs/heads/"+b+":refs/heads/"+b)
	}
	return c.pushes.do(ctx, repo, specs, func(ctx context.Context, repo string, specs []string) error {
		return c.git(ctx, repo, append([]string{"push", "--quiet", c.remoteURL()}, specs...)...)
	})
}

// Fetch brings the host's branch back into the local repository as
// refs/remotes/<host>/<branch> (never onto a local branch, which may be checked out or hold
// work of its own) and returns that ref. Fetches asked while one runs go together in the next
// (refBatch).
func (c *Conn) Fetch(ctx context.Context, repo, branch string) (string, error) {
	ref := "refs/remotes/" + c.Host.Name + "/" + branch
	return ref, c.fetches.do(ctx, repo, []string{"+refs/heads/" + branch + ":" + ref}, func(ctx context.Context, repo string, specs []string) error {
		// No FETCH_HEAD: several hosts' fetches into one repository at once would write it
		// together.
		return c.git(ctx, repo, append([]string{"fetch", "--quiet", "--no-write-fetch-head", c.remoteURL()}, specs...)...)
	})
}
