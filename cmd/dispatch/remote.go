package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentfleet/fleet/cmd/internal/dispatchenv"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/screen"
	"github.com/agentfleet/fleet/internal/statedir"
	ucli "github.com/urfave/cli/v2"
)

// hostOptions are --host and --hosts, and the settings a remote attempt reads.
type hostOptions struct {
	host, hostsFile string
	offlineAfter    time.Duration // DISPATCH_HOST_OFFLINE: no answer for this long is offline
}

// defaultHostsFile is --hosts when neither it nor DISPATCH_HOSTS names one.
const defaultHostsFile = "hosts.yaml"

// usage2 is a bad input of --host that is not a mistake of the command line: one line and exit
// 2, without the hint to --help (a bad hosts.yaml, an unknown or unreachable host).
func usage2(err error) error { return &cli.ExitError{Code: cli.ExitUsage, Err: err} }

// dispatchRemote runs the attempt on a host of hosts.yaml: it pushes the branch to the host's
// clone, runs the host's own dispatch there (the prompt on its stdin), follows the bead there
// until its result is final (or the host stops answering), brings the run and result records
// back into the local state directory and fetches the branch back as refs/remotes/HOST/BRANCH.
// The bead's local lock is held throughout, and a bead whose agent runs here is refused, so one
// state directory never has the bead's agent running twice.
func dispatchRemote(ctx context.Context, o *dispatchOptions, h hostOptions, s *settings, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := record.CheckBead(o.bead); err != nil {
		return cli.Usagef("%v", err)
	}
	if isVerb(o.bead) {
		return cli.Usagef("%q is a dispatch verb, not a bead id", o.bead)
	}
	if o.retry {
		return cli.Usagef("--retry is not yet supported with --host")
	}
	home, _ := os.UserHomeDir()
	hosts, err := remote.ParseHosts(h.hostsFile, home)
	if err != nil {
		return usage2(err)
	}
	host, err := hosts.Find(h.host)
	if err != nil {
		return usage2(err)
	}
	repoDir, branch, err := pushableBranch(ctx, o, host)
	if err != nil {
		return err
	}
	prompt, err := readPrompt(o.prompt, stdin, stderr)
	if err != nil {
		return err
	}
	unlock, err := lockRemoteBead(ctx, o.bead, s)
	if err != nil {
		return err
	}
	defer unlock()

	dialer, err := remote.NewDialer(remote.Options{ConnectTimeout: min(10*time.Second, h.offlineAfter/2),
		AliveInterval: max(time.Second, h.offlineAfter/4)})
	if err != nil {
		return err
	}
	defer dialer.Close()
	conn, err := dialer.Dial(ctx, host)
	if err != nil {
		return usage2(err)
	}
	if err := conn.CheckVersion(ctx, tool, fmt.Sprintf("%s version %s", tool, cli.Version())); err != nil {
		return usage2(err)
	}
	if err := conn.Push(ctx, repoDir, branch); err != nil {
		return fmt.Errorf("pushing %s to %s: %w", branch, host.Name, err)
	}
	fmt.Fprintf(stdout, "Host: %s (%s), clone %s, branch %s pushed\n", host.Name, host.SSH, host.Repo, branch)

	da := remote.DispatchArgs{Branch: branch, Force: o.force, NoContext: o.noContext, Worktree: o.worktree, NoTmux: o.noTmux,
		Verify: o.verify, Timeout: o.timeout, Bead: o.bead, Repo: host.Repo, Agent: o.agentArg, Template: o.template}
	// The host's dispatch's lines are the host's text: stripped of their control sequences as
	// they stream, as swarm run strips them, before they reach the terminal.
	run, err := conn.RunAttempt(ctx, remote.Attempt{Args: da, Prompt: prompt, Out: screen.NewStripWriter(stdout), ErrOut: screen.NewStripWriter(stderr),
		Watch: remote.Watch{Every: time.Second, OfflineAfter: h.offlineAfter}})
	if err != nil {
		return remoteAttemptError(ctx, err, o.bead, host)
	}
	final, number := run.Snapshot, run.Number
	if err := remote.BringBack(ctx, record.Store{Dir: s.stateDir}, final); err != nil {
		return fmt.Errorf("bringing the records of %s back from %s: %w", o.bead, host.Name, err)
	}
	if ref, err := conn.Fetch(ctx, repoDir, branch); err != nil {
		fmt.Fprintf(stderr, "%s: warning: fetching %s back from %s: %v\n", tool, branch, host.Name, err)
	} else {
		fmt.Fprintf(stdout, "Branch: %s's %s fetched as %s\n", host.Name, branch, ref)
	}
	res, _ := final.Final(number)
	// Its reason is the host's text too.
	shown := *res
	shown.Reason = remote.Printable(shown.Reason)
	fmt.Fprintln(stdout, outcomeLine(&shown))
	return exitFor(res)
}

// pushableBranch returns the repository of --repo, made absolute, and the branch to push to
// host: --branch, else the one checked out; a branch the repository has and git takes.
func pushableBranch(ctx context.Context, o *dispatchOptions, host *remote.Host) (repoDir, branch string, err error) {
	if repoDir, err = filepath.Abs(o.repo); err != nil {
		return "", "", err
	}
	repo := git.Repo{Dir: repoDir}
	if !repo.IsRepo(ctx) {
		return "", "", usage2(fmt.Errorf("%s is not a git repository: --host pushes its branch to %s's clone", o.repo, host.Name))
	}
	branch = o.branch
	if branch == "" {
		if branch, err = repo.Branch(ctx); err != nil || branch == "HEAD" {
			return "", "", usage2(fmt.Errorf("%s has no branch checked out; name one with --branch", o.repo))
		}
	}
	if err := repo.CheckBranch(ctx, branch); err != nil {
		return "", "", usage2(err)
	}
	if !repo.HasBranch(ctx, branch) {
		return "", "", usage2(fmt.Errorf("no branch %s in %s to push to %s", branch, o.repo, host.Name))
	}
	return repoDir, branch, nil
}

// lockRemoteBead takes bead's lock here for the whole remote attempt, without waiting, and
// refuses a bead that runs here already.
func lockRemoteBead(ctx context.Context, bead string, s *settings) (unlock func() error, err error) {
	if err := os.MkdirAll(s.stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}
	d := s.dir()
	if err := statedir.MkdirFor(d.Store.Paths().BeadLock(bead)); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	unlock, err = fsx.LockFile(lctx, d.Store.Paths().BeadLock(bead))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%s is being dispatched from this state directory (its lock is held); wait for it to end", bead)
	}
	if live, _ := attempt.Alive(ctx, d, s.where(bead), bead); live {
		unlock()
		return nil, fmt.Errorf("%s runs here already; 'dispatch kill %s' first, or wait for it", bead, bead)
	}
	return unlock, nil
}

// remoteAttemptError is dispatchRemote's error for RunAttempt's err: the host's dispatch's
// own exit code when it refused, and what became of the agent when the wait ended early.
func remoteAttemptError(ctx context.Context, err error, bead string, host *remote.Host) error {
	var offline *remote.OfflineError
	var refused *remote.StartError
	switch {
	case errors.As(err, &refused):
		return &cli.ExitError{Code: refused.Code, Err: refused.Err}
	case errors.As(err, &offline):
		return fmt.Errorf("%v; the agent may still run there, its records stay on %s until it answers", offline, host.Name)
	case ctx.Err() != nil:
		return fmt.Errorf("stopped waiting for %s (the agent goes on on %s; its records stay there)", bead, host.Name)
	}
	return err
}

// hostSettings reads --host, --hosts (else DISPATCH_HOSTS, else hosts.yaml) and
// DISPATCH_HOST_OFFLINE (seconds, default 30) from env.
func hostSettings(o *dispatchOptions, env dispatchenv.Settings) (hostOptions, error) {
	h := hostOptions{host: o.host, hostsFile: o.hostsFile}
	if h.hostsFile == "" {
		h.hostsFile = env.Hosts
	}
	if h.hostsFile == "" {
		h.hostsFile = defaultHostsFile
	}
	var err error
	h.offlineAfter, err = env.HostOffline.Seconds()
	return h, err
}

// maxRecordBytes bounds a record __records reads (a run record holds the prompt).
const maxRecordBytes = 8 << 20

// recordsCommand is the hidden verb a host's dispatch answers for dispatch --host (and any
// remote runner): the bead's run and result records and whether a supervisor runs it, as one
// JSON document (remote.Snapshot). It closes the records of a supervisor that died first, as
// dispatch wait does, so a lost attempt ends there too.
func recordsCommand() *cli.Command {
	o := &verbOptions{}
	return verbCommand(&cli.Command{
		Name: remote.RecordsVerb, Usage: "a bead's records and liveness, for dispatch --host", Hidden: true,
		Action: func(ctx context.Context, c *ucli.Context, std cli.Streams) error {
			bead, s, err := oneBead(c, o, remote.RecordsVerb)
			if err != nil {
				return err
			}
			snap, err := readSnapshot(ctx, s, bead)
			if err != nil {
				return err
			}
			return json.NewEncoder(std.Out).Encode(snap)
		},
	}, o)
}

// readSnapshot is the bead's snapshot on this host: its run and result records (read bounded,
// never through a link; a record that is not JSON left out) and whether a supervisor runs it.
// It closes the records of a supervisor that died first, as dispatch wait does, so a lost
// attempt ends here too.
func readSnapshot(ctx context.Context, s *settings, bead string) (*remote.Snapshot, error) {
	d := s.dir()
	attempt.ReconcileBead(ctx, d, s.tmux(), bead)
	live, _ := attempt.Alive(ctx, d, s.where(bead), bead)
	snap := &remote.Snapshot{Bead: bead, Live: live}
	// A dispatch opening an attempt holds the bead's lock until its records are written.
	if unlock, err := d.Layout.Lock(ctx, bead, 20*time.Millisecond); err == nil {
		unlock()
	} else if errors.Is(err, fsx.ErrLocked) {
		snap.Starting = true
	}
	for path, into := range map[string]*json.RawMessage{d.Store.Paths().Run(bead): &snap.Run, d.Store.Paths().Result(bead): &snap.Result} {
		b, err := statedir.ReadFile(path, maxRecordBytes)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if json.Valid(b) {
			*into = b
		}
	}
	return snap, nil
}

// serveCommand is the hidden verb a runner starts once per host over one ssh session
// (remote.Conn.Serve): it answers the runner's requests on its stdin (a bead's snapshot, read
// as the records verb reads it; a command run) until the session closes. The attempts it
// started outlive it: each has its supervisor, as one started over its own ssh session has.
func serveCommand() *cli.Command {
	o := &verbOptions{}
	return verbCommand(&cli.Command{
		Name: remote.ServeVerb, Usage: "serve a runner over one ssh session", Hidden: true,
		Action: func(ctx context.Context, c *ucli.Context, std cli.Streams) error {
			if c.NArg() != 0 {
				return cli.Usagef("dispatch %s takes no arguments", remote.ServeVerb)
			}
			s, err := o.settings()
			if err != nil {
				return err
			}
			return remote.Serve(ctx, std.In, std.Out, func(ctx context.Context, bead string) (*remote.Snapshot, error) {
				if err := record.CheckBead(bead); err != nil {
					return nil, err
				}
				return readSnapshot(ctx, s, bead)
			})
		},
	}, o)
}
