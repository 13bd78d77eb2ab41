package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	fgit "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/screen"
)

// Remote is a host of hosts.yaml as an executor: its slots are the host's max_agents, and each
// attempt is the host's own dispatch, run through the remote layer (remote.Conn.RunAttempt,
// as dispatch --host runs it): the task's branch (the base with its dependencies' branches
// merged in, made here by the scheduler) is pushed to the host's clone, the host's dispatch
// runs the agent in a worktree of its own there (--worktree --no-tmux) with a deadline
// (--timeout: the task's timeout, else an hour), the bead is followed there until its result is
// final, the records are brought back into StateDir, and the branch (what the agent left
// uncommitted committed there first, and the agent's commits on a branch of its own brought
// onto it) comes back with git fetch and becomes the task's branch here, in its worktree,
// where the scheduler commits it with the trailers.
//
// A host that stops answering is offline for the rest of the run: the attempt's Outcome says
// so with the time before which the task must not run elsewhere (the deadline its supervisor
// there stops the agent by, plus the kill grace and a margin).
type Remote struct {
	Conn *remote.Conn
	// Repo is the local repository (absolute): branches are pushed from and fetched into it.
	Repo string
	// StateDir is the local state directory the records are brought back into.
	StateDir string
	// Every is the time between two reads of the bead's records there (0: 1 s);
	// OfflineAfter is how long the host may not answer before it is offline (0: 30 s).
	Every, OfflineAfter time.Duration
	// KillGrace is the host's supervisor's grace between SIGTERM and SIGKILL at its deadline
	// (its DISPATCH_KILL_GRACE; 0: 10 s).
	KillGrace time.Duration
	// Log, if set, gets the host's dispatch's console lines and diagnostics.
	Log io.Writer
	// PerCommand runs each command on the host over an ssh session of its own, as before the
	// host's server (remote.Conn.Serve): for a side by side, and a way out.
	PerCommand bool

	// mu serializes the work on the host's worktrees (an earlier attempt's removed, the
	// host's dispatch adding its own): git worktree add fails on one being made at the same
	// moment, and a push while one is made fails its check of the worktrees' HEADs ("bad
	// object worktrees/…/HEAD"). Pushes hold it shared: the host's slots' go together.
	mu      sync.RWMutex
	offline atomic.Bool
}

// LeaseMargin is added to a remote attempt's deadline and kill grace before its task runs
// elsewhere: the host's clock for the deadline starts after the start was sent.
const LeaseMargin = 2 * time.Second

// Host is the host's name in hosts.yaml.
func (r *Remote) Host() string { return r.Conn.Host.Name }

// Slots are NAME-1 … NAME-max_agents.
func (r *Remote) Slots() []Slot {
	h := r.Conn.Host
	var port *int
	if h.Port != 0 {
		port = new(h.Port)
	}
	out := make([]Slot, h.MaxAgents)
	for i := range out {
		out[i] = Slot{ID: fmt.Sprintf("%s-%d", h.Name, i+1), Host: h.Name, Port: port}
	}
	return out
}

// StopGrace is how long after its deadline there (or after it was told to stop) an attempt on
// the host may still run: the host's kill grace (0: 10 s) and LeaseMargin. Its task must not
// run elsewhere before.
func (r *Remote) StopGrace() time.Duration {
	return remote.OrDefault(r.KillGrace, 10*time.Second) + LeaseMargin
}

// Offline says whether the host stopped answering during the run.
func (r *Remote) Offline() bool { return r.offline.Load() }

// Run runs one attempt of job on the host. An attempt to adopt (job.Adopt, after --resume)
// is looked for there first: one the host's records name is followed to its end (or judged
// by it) instead of another being started; one that never reached the host is started.
// The Outcome's reason and logs, which hold the host's text (a reason from its records, a
// line of its output in an error), are made printable: swarm run prints them and keeps
// them in its report.
func (r *Remote) Run(ctx context.Context, slot Slot, job Job) (out Outcome) {
	defer func() { out.Reason = remote.Printable(out.Reason) }()
	if r.offline.Load() {
		return r.offlineOutcome(0, time.Time{}, time.Now(), errors.New("the host is offline"))
	}
	if !r.PerCommand {
		// One server of the host's dispatch over one ssh session for every command of the
		// run there, started at the first and again if it dies.
		r.Conn.Serve()
	}
	// Its deadline there: the task's timeout, else an hour.
	at := &hostAttempt{job: job, hostWT: fgit.Repo{Dir: r.Conn.Host.Repo}.WorktreePath(job.Bead),
		lease: remote.OrDefault(job.Timeout, time.Hour)}
	a := r.attempt(slot, at)
	if job.Adopt > 0 && !r.offline.Load() {
		if adopted, ok := r.adopt(ctx, at, a.Watch); ok {
			return adopted
		}
	}
	a.Numbered = func(num int) []string {
		if job.Launched != nil {
			job.Launched(num)
		}
		// The host's dispatch refuses an attempt over its DISPATCH_MAX_RETRIES: the scheduler
		// counts the task's attempts, the host numbers only its own.
		return []string{fmt.Sprintf("DISPATCH_MAX_RETRIES=%d", max(job.MaxAttempts, num))}
	}

	if err := r.sendBranch(ctx, job, at.hostWT); err != nil {
		return r.lost(ctx, 0, time.Time{}, err)
	}
	r.mu.Lock()
	unlock := sync.OnceFunc(r.mu.Unlock)
	a.Started = func() {
		unlock()
		if job.Checkpoint != nil {
			job.Checkpoint("launched")
		}
	}
	run, err := r.Conn.RunAttempt(ctx, a)
	unlock()
	// RunAttempt returns the run once the attempt is numbered, whatever its error: before, the
	// attempt is number 0, never sent.
	run = cmp.Or(run, &remote.AttemptRun{})
	if refused, ok := errors.AsType[*remote.StartError](err); ok {
		return failed(run.Number, "launch-failed", refused)
	}
	if errors.Is(err, remote.ErrNotStarted) {
		// Its start was lost with the connection and it never began there: the host is
		// offline for the run, as a connection lost before the start is, and the task runs
		// elsewhere at once (no agent of it is at work there).
		return r.offlineOutcome(run.Number, at.lastBeat(), time.Now(), err)
	}
	out = r.settle(ctx, at, run.Number, run.Snapshot, err, run.Sent)
	// The host's records keep whole seconds, on the host's clock: a task of 0.4 s would last
	// 0 s and the run report no parallel speedup. An attempt started by this run is timed
	// here, from its start sent to its end brought back, as a local one is.
	if !run.Sent.IsZero() && !out.Interrupted && out.Offline == nil {
		out.Started, out.Finished = run.Sent, time.Now()
	}
	return out
}

// hostAttempt is an attempt of a job on the host as Run follows it: what its end is settled by.
type hostAttempt struct {
	job Job
	// hostWT is the task's worktree on the host, lease the attempt's deadline there.
	hostWT string
	lease  time.Duration
	// beat is the last successful read of its records there (a time.Time), set by the watch
	// as it reads them: the heartbeat an offline Outcome reports.
	beat atomic.Value
}

// lastBeat is the last successful read of the attempt's records there (zero: none).
func (at *hostAttempt) lastBeat() time.Time {
	t, _ := at.beat.Load().(time.Time)
	return t
}

// attempt is how the host's dispatch is asked to run the attempt: in a worktree of its own on
// the task's branch, until the lease, its lines logged and its records' reads the heartbeat.
func (r *Remote) attempt(slot Slot, at *hostAttempt) remote.Attempt {
	job := at.job
	agentArg := job.Agent
	if job.Model != "" {
		agentArg += ":" + job.Model
	}
	args := remote.DispatchArgs{Branch: job.Branch, Worktree: true, NoTmux: true, NoContext: true, Timeout: at.lease,
		Bead: job.Bead, Repo: r.Conn.Host.Repo, Agent: agentArg}
	log := orDiscard(r.Log)
	// The host's dispatch's lines are the host's text: stripped of their control sequences
	// as they stream, as an agent's output is (swarm logs), before they reach a terminal.
	return remote.Attempt{Args: args, Prompt: job.Prompt, Out: screen.NewStripWriter(log), ErrOut: screen.NewStripWriter(log),
		Env: append(append([]string{}, job.Env...), "SWARM_AGENT_ID="+slot.ID),
		Watch: remote.Watch{Every: r.Every, OfflineAfter: r.OfflineAfter, Heartbeat: func(t time.Time, _ *remote.Snapshot) {
			at.beat.Store(t)
			if job.Heartbeat != nil {
				job.Heartbeat(t)
			}
		}}}
}

// sendBranch makes the task's branch the host's as it is here: the host's worktree and branch
// of an earlier attempt of the task go (every attempt starts from the branch pushed now), under
// mu, and the branch is pushed to the host's clone, under mu shared: the pushes of the host's
// slots that come together go in one git push (remote.Conn.Push).
func (r *Remote) sendBranch(ctx context.Context, job Job, hostWT string) error {
	h := r.Conn.Host
	script := `git -C "$1" worktree remove --force "$2" >/dev/null 2>&1; git -C "$1" worktree prune; git -C "$1" branch -D "$3" >/dev/null 2>&1; true`
	r.mu.Lock()
	_, err := r.Conn.Run(ctx, remote.Cmd{Argv: []string{"sh", "-c", script, "sh", h.Repo, hostWT, job.Branch}, Timeout: time.Minute})
	r.mu.Unlock()
	if err != nil {
		return err
	}
	r.mu.RLock()
	err = r.Conn.Push(ctx, r.Repo, job.Branch)
	r.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("pushing %s to %s: %w", job.Branch, h.Name, err)
	}
	return nil
}

// adopt looks on the host for attempt job.Adopt, which an earlier run started there: when the
// host's records name it, it is followed to its end and settled (ok); when they name an
// earlier attempt or none, it never reached the host, and the caller starts it (not ok).
func (r *Remote) adopt(ctx context.Context, at *hostAttempt, w remote.Watch) (Outcome, bool) {
	job := at.job
	// Its start was sent before now (by the earlier run): a deadline counted from now, on this
	// machine's clock, is later than the host's own.
	sent := time.Now()
	snap, err := r.Conn.Snapshot(ctx, job.Bead, remote.OrDefault(r.OfflineAfter, 30*time.Second))
	if err != nil {
		// Not known whether it runs there: held until its deadline could have passed.
		return r.settle(ctx, at, job.Adopt, nil, err, sent), true
	}
	w.Heartbeat(time.Now(), snap)
	run, derr := record.DecodeRun(snap.Run)
	switch {
	case len(snap.Run) == 0 || derr != nil || run.Attempt < job.Adopt:
		return Outcome{}, false
	case run.Attempt > job.Adopt:
		return failed(job.Adopt, "records-replaced", fmt.Errorf("the records of %s on %s are attempt %d's, not %d's", job.Bead, r.Host(), run.Attempt, job.Adopt)), true
	}
	if _, ok := snap.Final(job.Adopt); !ok {
		fmt.Fprintf(orDiscard(r.Log), "%s: attempt %d of an earlier run still runs here: waiting for it\n", job.Bead, job.Adopt)
		snap, err = r.Conn.Wait(ctx, job.Bead, job.Adopt, w)
	}
	return r.settle(ctx, at, job.Adopt, snap, err, sent), true
}

func orDiscard(w io.Writer) io.Writer { return cmp.Or(w, io.Discard) }

// settle is the end of attempt n on the host, as its wait left it (snap final, or err): the
// records and the branch brought back, or the host found offline (the task held until the
// attempt's deadline there, sent plus lease and the kill grace, has passed), or the attempt
// stopped there when ctx ended.
func (r *Remote) settle(ctx context.Context, at *hostAttempt, n int, snap *remote.Snapshot, err error, sent time.Time) Outcome {
	job := at.job
	switch {
	case err != nil && ctx.Err() != nil:
		r.stop(job.Bead)
		fallthrough // lost reports it interrupted
	case err != nil && sent.IsZero():
		return r.lost(ctx, n, at.lastBeat(), err)
	case errors.Is(err, remote.ErrUnreachable):
		return r.offlineOutcome(n, at.lastBeat(), sent.Add(at.lease+r.StopGrace()), err)
	case err != nil:
		return failed(n, "remote-failed", err)
	}
	out := outcomeOf(n, snap)
	// The attempt has ended there: what stands between it and its end here (its records
	// written here, its branch fetched: git's locks, a busy disk) is tried again a few times
	// before the attempt is judged failed and its task run again.
	bctx := context.WithoutCancel(ctx)
	for try := 1; ; try++ {
		kind := "records-not-brought-back"
		err := remote.BringBack(bctx, record.Store{Dir: r.StateDir}, snap)
		if err == nil && out.Status == record.StatusDone {
			kind = "branch-not-brought-back"
			err = r.bringBranch(bctx, job, at.hostWT)
		}
		switch _, stray := errors.AsType[*fgit.StrayError](err); {
		case err == nil:
			return out
		case stray:
			// The agent's work is on a branch of its own there that the task's cannot take
			// by a fast-forward: no try changes that. It stays there, as a local one stays
			// in its worktree, and the attempt fails as a local one does.
			out.Status, out.Reason = record.StatusFailed, oneLine(err)
			return out
		case errors.Is(err, remote.ErrNoMaster) && try < bringTries:
			// The master closed (its ServerAlive checks gave up): a host that answers again
			// is not offline, and its finished attempt is brought back, not run elsewhere.
			rctx, cancel := context.WithTimeout(bctx, remote.OrDefault(r.OfflineAfter, 30*time.Second))
			rerr := r.Conn.Reconnect(rctx)
			cancel()
			if rerr != nil {
				return r.offlineOutcome(n, time.Now(), time.Now(), rerr)
			}
			fmt.Fprintf(orDiscard(r.Log), "%s: the connection to %s closed while attempt %d was brought back; connected again\n", job.Bead, r.Host(), n)
			continue
		case errors.Is(err, remote.ErrUnreachable) || errors.Is(err, remote.ErrNoMaster):
			// The agent ended: nothing of it runs there any more, the task may run elsewhere now.
			return r.offlineOutcome(n, time.Now(), time.Now(), err)
		case try == bringTries:
			return failed(n, kind, err)
		}
		fmt.Fprintf(orDiscard(r.Log), "%s: attempt %d ended %s, but bringing it back failed (%s); trying again\n", job.Bead, n, out.Status, oneLine(err))
		time.Sleep(time.Duration(try) * 500 * time.Millisecond)
	}
}

// bringTries is how many times the end of a remote attempt is brought back before it is
// judged failed (over about 3 s).
const bringTries = 4

// bringBranch commits what the agent left uncommitted in the host's worktree, brings the
// agent's commits onto the task's branch there when it worked on a branch of its own
// (returnScript), fetches the branch and makes it the task's branch here, in its worktree.
// An agent whose commits cannot be brought onto the task's branch is a *fgit.StrayError, and
// nothing is fetched.
func (r *Remote) bringBranch(ctx context.Context, job Job, hostWT string) error {
	// The task's name and branch reach the host's shell as arguments ("$2", "$3"), never in
	// its script.
	res, err := r.Conn.Run(ctx, remote.Cmd{Argv: []string{"sh", "-c", returnScript, "sh", hostWT, job.Task + ": the agent's uncommitted work", job.Branch}, Timeout: time.Minute})
	if err != nil {
		return err
	}
	if res.Code != 0 {
		return fmt.Errorf("host %s: committing the agent's work in %s: exit %d: %s", r.Conn.Host.Name, hostWT, res.Code, remote.Printable(string(res.Stderr)))
	}
	if err := r.returned(job, res.Stdout); err != nil {
		return err
	}
	ref, err := r.Conn.Fetch(ctx, r.Repo, job.Branch)
	if err != nil {
		return err
	}
	_, err = fgit.Cmd{Dir: job.Dir, Env: []string{"GIT_TERMINAL_PROMPT=0"}}.Output(ctx, "reset", "--hard", "--quiet", ref)
	return err
}

// returnScript runs in the host's worktree ("$1") after the agent ended: it commits what the
// agent left uncommitted (message "$2") on the worktree's HEAD, then gives the task's branch
// ("$3") the rule git.Repo.ReturnToBranch gives it here. Coding agents often switch to a
// branch of their own (git switch -c …) and commit there, so the task's branch stays at the
// base: when HEAD is elsewhere and its commit descends from the branch's tip, the branch is
// moved to it (from that tip only: update-ref with the old value) and HEAD is put back on it.
// It says on its output what it found: "on-branch"; or "moved" or "stray" (HEAD does not
// descend from the tip; nothing moved), each followed by HEAD's commit and HEAD's ref (empty
// when detached) on lines of their own.
const returnScript = `cd "$1" || exit
git add -A && { git diff --cached --quiet || git -c user.name="swarm run" -c user.email=swarm-run@localhost commit --quiet --no-verify -m "$2"; } || exit
full="refs/heads/$3"
ref=$(git symbolic-ref -q HEAD)
if [ "$ref" = "$full" ]; then echo on-branch; exit 0; fi
head=$(git rev-parse --verify --quiet 'HEAD^{commit}') || { echo "the worktree's HEAD ($ref) names no commit" >&2; exit 1; }
tip=$(git rev-parse --verify --quiet "$full^{commit}") || { echo "the task's branch $3 is gone (the worktree is on $ref)" >&2; exit 1; }
verdict=stray
if [ "$(git merge-base "$tip" "$head")" = "$tip" ]; then
	git update-ref -m "brought back from $ref" "$full" "$head" "$tip" && git symbolic-ref -m "back to $3" HEAD "$full" || exit
	verdict=moved
fi
printf '%s\n%s\n%s\n' "$verdict" "$head" "$ref"`

// commitID is a commit's full name as git prints it (SHA-1 or SHA-256).
var commitID = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// returned reads returnScript's answer: nil when the task's branch has the agent's commits
// (logging where they were when it worked on a branch of its own), a *fgit.StrayError when
// they could not be brought onto it. The answer is the host's text: its commit must be one,
// and its ref is printed only made printable.
func (r *Remote) returned(job Job, out []byte) error {
	lines := strings.SplitN(strings.TrimSpace(string(out)), "\n", 3)
	if len(lines) == 1 && lines[0] == "on-branch" {
		return nil
	}
	if len(lines) < 2 || (lines[0] != "moved" && lines[0] != "stray") || !commitID.MatchString(lines[1]) {
		return fmt.Errorf("host %s: bringing the agent's work onto %s in %s: unexpected answer %q", r.Conn.Host.Name, job.Branch, job.Dir, remote.Printable(string(out)))
	}
	// HEAD's ref, the third line, is empty when detached (then the line may be missing).
	stray := fgit.NewStrayError(job.Branch, remote.Printable(append(lines, "")[2]), lines[1])
	if lines[0] == "stray" {
		return stray
	}
	fmt.Fprintf(orDiscard(r.Log), "%s: the agent worked on %s on %s; its commits are brought onto %s\n", job.Task, stray.Head, r.Host(), job.Branch)
	return nil
}

// lost is an attempt cut short by the connection before or while it was started: the host is
// offline when the error says so, and its task may run elsewhere at once unless the start
// was sent.
func (r *Remote) lost(ctx context.Context, n int, hb time.Time, err error) Outcome {
	if ctx.Err() != nil {
		return Outcome{Attempt: n, Status: record.StatusFailed, Reason: "interrupted", Interrupted: true, Started: time.Now(), Finished: time.Now()}
	}
	if errors.Is(err, remote.ErrUnreachable) || errors.Is(err, remote.ErrNoMaster) {
		return r.offlineOutcome(n, hb, time.Now(), err)
	}
	return failed(n, "remote-failed", err)
}

// offlineOutcome marks the host offline and reports the attempt as cut off by it.
func (r *Remote) offlineOutcome(n int, hb, notBefore time.Time, err error) Outcome {
	r.offline.Store(true)
	t := time.Now()
	return Outcome{Attempt: n, Status: record.StatusFailed, Reason: "host-offline: " + oneLine(err), Started: t, Finished: t,
		Offline: &Offline{Host: r.Conn.Host.Name, LastHeartbeat: hb, NotBefore: notBefore}}
}

// stop asks the host's dispatch to stop the bead's agent (the run was interrupted), briefly:
// a host that does not answer stops it at its deadline.
func (r *Remote) stop(bead string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.Conn.Run(ctx, remote.Cmd{Argv: []string{r.Conn.Program("dispatch"), "--state-dir", r.Conn.Host.StateDir, "kill", bead}, Env: r.Conn.Env()})
}

// outcomeOf is the Outcome of attempt n by its final snapshot, its logs (the host's text) stripped
// of their control sequences.
func outcomeOf(n int, s *remote.Snapshot) Outcome {
	res, ok := s.Final(n)
	if !ok {
		return Outcome{Attempt: n, Status: record.StatusFailed, Reason: "no final result", Finished: time.Now()}
	}
	out := recorded(res.Attempt, res.Status, res.ExitCode, res.StartedAt, res.FinishedAt)
	if res.Status != record.StatusDone {
		out.Reason = res.Reason
	}
	if res.OutputSummary != nil {
		out.Logs = strings.TrimSpace(screen.Strip(*res.OutputSummary))
	}
	return out
}
