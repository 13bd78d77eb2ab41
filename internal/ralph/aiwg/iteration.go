package aiwg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ralph/breaker"
	"github.com/agentfleet/fleet/internal/ralph/rails"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

// iterResult is what one iteration's agent run came to.
type iterResult struct {
	it      Iteration
	resetAt time.Time // a usage limit's reset, when its message named one
	fatal   bool      // the attempt could not be set up: the loop stops
	// before and after identify the working tree around the iteration (breaker.Fingerprint;
	// "" outside git), tail is the end of its output: the no-progress breaker's observation.
	before, after, tail string
	// log is the iteration's output log.
	log string
}

// beat is the controller's heartbeat while an iteration runs: its loop's registry entry's
// last_active set to now (a state update sets it too). A beat that cannot be written is
// skipped: the next one will do.
func (c *controller) beat(ctx context.Context, now time.Time) {
	c.ws.Locked(ctx, func(reg *Registry) error {
		for i := range reg.ActiveLoops {
			if reg.ActiveLoops[i].LoopID == c.id {
				reg.ActiveLoops[i].LastActive = stamp(now)
			}
		}
		return nil
	})
}

// madeProgress says whether the iteration ended done having changed the working tree (a
// commit, or a file not ignored): seed 003's successful_iterations, "iterations that made
// progress", counts these. Outside git nothing tells a change: an iteration that ended done
// counts.
func (r iterResult) madeProgress() bool {
	if r.it.Outcome != OutcomeDone {
		return false
	}
	return r.before == "" || r.after == "" || r.before != r.after
}

// Bead is iteration i's bead: its run and result records are state/runs/<loop_id>-<i>.json.
func Bead(id string, i int) string { return id + "-" + strconv.Itoa(i) }

// killGrace is how long an iteration's agent has between TERM and KILL.
const killGrace = 5 * time.Second

// iterate runs iteration i: the agent, headless on a fresh session, as a supervised attempt of
// bead <loop_id>-<i> (run and result records in the loop's state directory, as dispatch writes
// them), and waits for its end. A pause, an abort or a signal to the controller stops it; it
// is then interrupted, and run again when the loop continues.
func (c *controller) iterate(ctx context.Context, st *State, i int) iterResult {
	bead := Bead(st.LoopID, i)
	started := time.Now()
	res := iterResult{it: Iteration{Number: i, Bead: bead, StartedAt: stamp(started)}}
	fail := func(err error) iterResult {
		fmt.Fprintf(c.log, "ralph: error: loop %s iteration %d: %v\n", c.id, i, err)
		res.it.FinishedAt = stamp(time.Now())
		res.it.DurationSeconds = round2(time.Since(started).Seconds())
		res.it.Outcome, res.it.Reason, res.fatal = OutcomeFailed, err.Error(), true
		return res
	}
	profile, model, err := c.rt.agent(st.Agent)
	if err != nil {
		return fail(err)
	}
	d := attempt.NewDir(st.StateDir)
	where := attempt.Where{Backend: supervise.BackendProcess, KillGrace: killGrace}
	// force: a supervisor of this bead left by a controller that died is stopped, not waited for.
	opened, err := attempt.Open(ctx, d, bead, where, true)
	if err != nil {
		return fail(err)
	}
	res.it.Attempt = opened.Number
	prompt := Prompt(st, i)
	inv := profile.Invoke(agent.Call{Model: model.Resolved, Prompt: prompt, PromptFile: d.Layout.PromptPath(bead), Dir: st.WorkingDirectory})
	res.log = d.Layout.LogPath(bead)
	timeout, byIteration := c.iterationTimeout(st)
	run := record.Run{SchemaVersion: record.SchemaVersion, Bead: bead, Agent: profile.Name, Model: model.Name,
		Repo: st.WorkingDirectory, Prompt: record.Truncate(prompt, 200), PromptHash: record.PromptHash(prompt), PromptFull: prompt,
		StartedAt: stamp(started), Status: record.StatusRunning, Attempt: opened.Number, MaxRetries: opened.Number,
		SessionName: record.SessionName(bead), ResultFile: record.ResultFile(st.StateDir, bead), TemplateName: record.Str("ralph")}
	spec := &attempt.Spec{
		Attempt: supervise.Attempt{Name: bead, Number: opened.Number, Dir: st.WorkingDirectory, Argv: profile.JSONOutput(inv.Argv),
			Env:    loopEnv(c.rt.Env, st, i),
			Prompt: prompt, Stdin: inv.Stdin, PromptFile: inv.PromptFile, Terminal: profile.Terminal,
			Timeout: timeout, KillGrace: killGrace, DiskDirs: []string{st.StateDir, st.WorkingDirectory},
			LogPath: d.Layout.LogPath(bead)},
		Backend: supervise.BackendProcess, Run: run,
	}
	if c.rt.Supervisor == nil {
		opened.Close()
		return fail(errors.New("no command line to start an iteration's supervisor with"))
	}
	res.before, _ = breaker.Fingerprint(ctx, st.WorkingDirectory, ".aiwg")
	_, err = opened.Launch(ctx, spec, c.rt.Supervisor(st.StateDir))
	opened.Close()
	if err != nil {
		return fail(err)
	}
	stopped := c.wait(ctx, d, where, bead, profile)
	if r, err := record.ReadRun(d.Store.RunPath(bead)); err == nil && r.Status == record.StatusRunning {
		attempt.ReconcileBead(ctx, d, nil, bead) // its supervisor died without recording the end
	}
	finished := time.Now()
	res.it.FinishedAt = stamp(finished)
	res.it.DurationSeconds = round2(finished.Sub(started).Seconds())
	r, err := record.ReadRun(d.Store.RunPath(bead))
	if err != nil {
		return fail(fmt.Errorf("reading the iteration's run record: %w", err))
	}
	res.it.ExitCode = r.ExitCode
	res.it.Reason = deref(r.FailureReason)
	out := res.noteOutput(profile, d.Layout.LogPath(bead))
	limited, resetAt := profile.UsageLimit(string(out), finished)
	iterTimeout := time.Duration(0)
	if byIteration {
		iterTimeout = timeout
	}
	c.judge(&res, r, stopped, limited, resetAt, iterTimeout)
	if c.ledger.rails.CommitEach && (res.it.Outcome == OutcomeDone || res.it.Outcome == OutcomeFailed) {
		c.commitEach(ctx, st, i)
	}
	// After the commit: the breaker compares the trees the iterations leave, HEAD included.
	res.after, _ = breaker.Fingerprint(ctx, st.WorkingDirectory, ".aiwg")
	return res
}

// noteOutput notes what the end of the agent's output log, at logPath, says: its last words
// (for the no-progress breaker), its tokens and cost. It returns that end.
func (res *iterResult) noteOutput(profile *agent.Profile, logPath string) []byte {
	out := logTail(logPath)
	res.tail = string(out[max(0, len(out)-4096):])
	u := profile.ParseUsage(out)
	if u.HasCost {
		cost := u.CostUSD
		res.it.CostUSD = &cost
	}
	res.it.InputTokens, res.it.OutputTokens = u.InputTokens, u.OutputTokens
	return out
}

// iterationTimeout is the timeout of an iteration of the loop st: the loop's time left, or the
// iteration's own (byIteration), whichever ends first; 0 for none.
func (c *controller) iterationTimeout(st *State) (timeout time.Duration, byIteration bool) {
	if dl, ok := deadline(st); ok {
		if timeout = time.Until(dl); timeout < time.Second {
			timeout = time.Second
		}
	}
	if it := time.Duration(c.ledger.rails.IterationTimeoutSeconds) * time.Second; it > 0 && (timeout == 0 || it < timeout) {
		timeout, byIteration = it, true
	}
	return timeout, byIteration
}

// judge sets the outcome of the iteration res whose run record is r: how the controller
// stopped it (stopped), whether its agent's output is a usage limit (limited, resetting at
// resetAt), and the iteration's own timeout (iterTimeout, 0 when the loop's ended it).
func (c *controller) judge(res *iterResult, r *record.Run, stopped int, limited bool, resetAt time.Time, iterTimeout time.Duration) {
	switch {
	case stopped == stopInterrupted:
		res.it.Outcome, res.it.Reason = OutcomeInterrupted, "stopped by "+interruptCause(c)
	case limited && r.Status != record.StatusDone:
		res.it.Outcome, res.it.Reason, res.resetAt = OutcomeUsageLimit, "usage limit", resetAt
	case stopped == stopInactivity:
		res.it.Outcome = OutcomeFailed
		res.it.Reason = fmt.Sprintf("inactivity-timeout: no output for %s", time.Duration(c.ledger.rails.InactivityTimeoutSeconds)*time.Second)
	case stopped == stopBudget:
		res.it.Outcome = OutcomeFailed
		res.it.Reason = fmt.Sprintf("hard-budget: the agent's cost so far reached the budget ($%.2f)", *c.ledger.rails.BudgetUSD)
	case r.Status == record.StatusTimeout && iterTimeout > 0:
		res.it.Outcome = OutcomeFailed
		res.it.Reason = fmt.Sprintf("iteration-timeout: the iteration ran %s", iterTimeout)
	case r.Status == record.StatusDone:
		res.it.Outcome = OutcomeDone
	default:
		res.it.Outcome = OutcomeFailed
		if res.it.Reason == "" {
			res.it.Reason = r.Status
		}
	}
}

// commitEach commits what iteration i left in the working tree (--commit-each), .aiwg and the
// state directory left out, and says so in the log; a commit that fails is a warning there and
// the loop goes on.
func (c *controller) commitEach(ctx context.Context, st *State, i int) {
	commit, err := rails.Commit(ctx, st.WorkingDirectory, []string{filepath.Join(c.ws.Root, ".aiwg"), st.StateDir}, st.LoopID, i)
	switch {
	case err != nil:
		fmt.Fprintf(c.log, "%s ralph: warning: loop %s iteration %d: --commit-each: %s\n", stamp(time.Now()), c.id, i, OneLine(err.Error(), 300))
	case commit == "":
		fmt.Fprintf(c.log, "%s iteration %d: no change, no commit\n", stamp(time.Now()), i)
	default:
		fmt.Fprintf(c.log, "%s iteration %d: commit %s\n", stamp(time.Now()), i, commit)
	}
}

func interruptCause(c *controller) string {
	if c.stop.Load() {
		return "a signal to the controller"
	}
	return "ralph pause or abort"
}

// Why wait stopped an iteration's agent.
const (
	stopNone        = iota
	stopInterrupted // the loop no longer runs: ralph pause or abort, a signal to the controller
	stopInactivity  // no output for the loop's inactivity timeout
	stopBudget      // --hard-budget: the cost so far reached the budget
)

// hardBudgetEvery is how often a hard budget reads the running agent's output for its cost.
const hardBudgetEvery = time.Second

// wait waits until bead's supervisor is gone (its process too), and says why it stopped the agent, if it did:
// the loop stopped running meanwhile (ralph pause or abort, or a signal to the controller),
// its log did not grow for the inactivity timeout, or, with a hard budget, the cost the agent
// reported so far reached what the budget has left.
func (c *controller) wait(ctx context.Context, d attempt.Dir, where attempt.Where, bead string, profile *agent.Profile) int {
	stopped := stopNone
	r := c.ledger.rails
	idle := time.Duration(r.InactivityTimeoutSeconds) * time.Second
	logPath := d.Layout.LogPath(bead)
	size, changed := int64(-1), time.Now()
	var costRead time.Time
	beat := time.Now()
	seen := 0 // the supervisor's pid, last seen in its entry
	for {
		live, entry := attempt.Alive(ctx, d, where, bead)
		if entry != nil && entry.PID > 0 {
			seen = entry.PID
		}
		if !live {
			// The entry goes once the end is recorded, a moment before the supervisor exits:
			// the iteration ends with its process, so that nothing of it runs on once the
			// loop's state says it ended (a test's directory removed under it).
			if seen == 0 || !supervise.SupervisorAlive(seen, bead) {
				return stopped
			}
			supervise.WaitExit(ctx, &supervise.Entry{Name: bead, PID: seen}, pollEvery)
			continue
		}
		if now := time.Now(); now.Sub(beat) >= c.rt.heartbeat() {
			beat = now
			c.beat(ctx, now)
		}
		if stopped == stopNone {
			now := time.Now()
			st, err := c.ws.ReadState(c.id)
			if c.stop.Load() || (err == nil && (st.Status != StatusRunning || !c.mine(st))) {
				stopped = stopInterrupted
			}
			if stopped == stopNone && idle > 0 {
				if fi, err := os.Lstat(logPath); err == nil && fi.Size() != size {
					size, changed = fi.Size(), now
				} else if now.Sub(changed) >= idle {
					stopped = stopInactivity
					fmt.Fprintf(c.log, "%s loop %s: %s printed nothing for %s; stopped\n", stamp(now), c.id, bead, idle)
				}
			}
			if stopped == stopNone && r.Hard() && now.Sub(costRead) >= hardBudgetEvery {
				costRead = now
				if u := profile.ParseUsage(logTail(logPath)); u.HasCost && r.Reached(c.ledger.spent+u.CostUSD) {
					stopped = stopBudget
					fmt.Fprintf(c.log, "%s loop %s: %s's cost so far reaches the budget; stopped (--hard-budget)\n", stamp(now), c.id, bead)
				}
			}
			if stopped != stopNone {
				attempt.Stop(ctx, nil, entry, "", supervise.SignalKill)
			}
		}
		time.Sleep(pollEvery)
	}
}

// logTail is the end of an iteration's log, where an agent prints its result and its limit
// message: at most 256 KiB, read from a regular file only, never through a link.
func logTail(path string) []byte {
	b, _ := fsx.ReadTail(path, 256<<10)
	// The agent ran on a terminal: its lines end in \r\n.
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
}

// maxCheckOutput is how much of a completion check's output the state keeps, and the next
// prompt gets: its end, where test runners print the failures' summary.
const maxCheckOutput = 4000

// maxOldCheckOutput is what the state keeps of the output of the checks before the last.
const maxOldCheckOutput = 500

// checkTimeout bounds one run of the completion command when the loop has no timeout.
const checkTimeout = 30 * time.Minute

// loopEnv is env with the loop's id and the iteration's number, for the agent and the check.
func loopEnv(env []string, st *State, i int) []string {
	if env == nil {
		env = os.Environ() // as exec.Cmd does with a nil Env
	}
	return append(slices.Clip(env), "RALPH_LOOP_ID="+st.LoopID, "RALPH_ITERATION="+strconv.Itoa(i))
}

// checkDrain bounds how long the output of a completion command that exited is still read:
// a child it left in the background (a test run that starts a server) may hold the pipe for
// ever.
const checkDrain = 2 * time.Second

// runCheck runs the completion command in the loop's directory, in env: the command's words
// themselves when it is plain words, else through sh -c (see CheckArgv). It runs in a process
// group of its own, which is killed when the command exits (what it left behind goes with it),
// when its time is up, and when stop says the loop no longer runs (ralph pause or abort, a
// signal to the controller): no check outlives its loop's control. Its output is read until it
// exits, and then for checkDrain at most.
func runCheck(ctx context.Context, st *State, i int, env []string, stop func() bool) Check {
	started := time.Now()
	limit := checkTimeout
	if dl, ok := deadline(st); ok {
		limit = max(min(time.Until(dl), checkTimeout), 10*time.Second)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	argv := CheckArgv(st.CompletionCriteria)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = st.WorkingDirectory
	cmd.Env = loopEnv(env, st, i)
	out := &tailBuffer{max: 64 << 10}
	// A group of its own: a timeout, a stop and its own end kill what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	code := 0
	pr, pw, err := os.Pipe()
	if err == nil {
		// The command writes into a file of ours, not a pipe exec.Cmd copies from: Wait then
		// returns when the command exits, whoever else holds the pipe.
		cmd.Stdout, cmd.Stderr = pw, pw
		err = cmd.Start()
		pw.Close()
	}
	if err != nil {
		if pr != nil {
			pr.Close()
		}
		code = 127
		fmt.Fprintf(out, "ralph: cannot run the completion command: %v\n", err)
		return Check{Iteration: i, Timestamp: stamp(time.Now()), Passed: false, Output: tailString(out.String(), maxCheckOutput),
			ExitCode: code, DurationSeconds: round2(time.Since(started).Seconds())}
	}
	read := make(chan struct{})
	go func() {
		io.Copy(out, pr)
		close(read)
	}()
	note, err := waitCheck(ctx, cmd, limit, stop)
	// What it left in its group goes with it.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-read:
	case <-time.After(checkDrain):
		// A child that left the group holds the pipe: what it writes now is not the check's.
	}
	pr.Close()
	<-read
	out.WriteString(note)
	code = exitCodeOf(err)
	return Check{Iteration: i, Timestamp: stamp(time.Now()), Passed: code == 0 && note == "", Output: tailString(out.String(), maxCheckOutput),
		ExitCode: code, DurationSeconds: round2(time.Since(started).Seconds())}
}

// waitCheck waits for the completion command cmd to exit, and kills its group when ctx ends
// (its time, limit, is up) or stop says the loop no longer runs; note then says which, for its
// output. err is cmd.Wait's.
func waitCheck(ctx context.Context, cmd *exec.Cmd, limit time.Duration, stop func() bool) (note string, err error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case err = <-done:
			return "", err
		case <-ctx.Done():
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
			return fmt.Sprintf("\nralph: the completion command did not finish in %s and was killed\n", limit), err
		case <-tick.C:
			if stop != nil && stop() {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				err = <-done
				return "\nralph: the completion command was stopped: the loop no longer runs\n", err
			}
		}
	}
}

// exitCodeOf is the exit code of a command that Wait returned err for: a signal's as the shell
// counts it (128 + SIGKILL, the only one sent), 1 when it cannot be known.
func exitCodeOf(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if code := ee.ExitCode(); code >= 0 {
			return code
		}
		return 128 + int(syscall.SIGKILL)
	}
	return 1
}

// shellChars are what makes a completion command shell syntax: quoting, expansion,
// redirection, pipes, lists, globs, comments, assignments.
const shellChars = "|&;<>()$`\\\"'*?[]#~=%{}\n\t"

// CheckArgv is how the completion command runs. AIWG ran it through a shell (the model ran
// the command it chose, in Bash): a command with any shell syntax still does (sh -c), since
// the user wrote it for one; plain words ("npm test", "go test ./...") run as they are, with no
// shell to interpret them. The command is the user's own; no prompt or agent output ever
// reaches it.
func CheckArgv(cmd string) []string {
	if strings.ContainsAny(cmd, shellChars) || len(strings.Fields(cmd)) == 0 {
		return []string{"/bin/sh", "-c", cmd}
	}
	return strings.Fields(cmd)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// WriteString is Write of a string.
func (t *tailBuffer) WriteString(s string) { t.Write([]byte(s)) }

func (t *tailBuffer) String() string {
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return strings.ToValidUTF8(string(b), "")
}

// tailString is the last n bytes of s, cut at a rune.
func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[len(s)-n:], "")
}

// Prompt is iteration i's prompt: the task, what done means, and what the last completion
// check printed (each iteration is a fresh session: this is all it knows of the others).
func Prompt(st *State, i int) string {
	var b strings.Builder
	b.WriteString(st.Task)
	b.WriteString("\n\n---\n")
	fmt.Fprintf(&b, "This is iteration %d of at most %d of a loop that ends when this command exits 0 in %s:\n\n    %s\n",
		i, st.Configuration.MaxIterations, st.WorkingDirectory, st.CompletionCriteria)
	if last := st.Progress.LastCompletionCheck; last != nil {
		fmt.Fprintf(&b, "\nAfter iteration %d it exited %d. Its output (the end of it):\n\n%s\n", last.Iteration, last.ExitCode, last.Output)
	}
	return b.String()
}
