package attempt

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/workspace"
)

// Recorder writes a dispatched attempt's run and result records: the supervisor's side of the
// contract for dispatch. Spec is nil for a Recorder that only closes lost attempts.
//
// Around the final records it runs what dispatch.sh ran when an agent ended (Spec.Hooks):
// before them, the relay's completion, Truthsayer stopped and the verifications, since they
// are part of the records; after them, once they are written and the bead's lock is let go,
// the workspace's validate-state.sh, the memory line and the wake. Those come after the
// records so that whoever they wake reads the final ones, and they cannot change them.
type Recorder struct {
	Dir  Dir
	Spec *Spec

	stopHeartbeat func()
	// prepared is what ran before the records for the outcome being recorded: the supervisor
	// retries Finished while the write fails, and none of it runs twice.
	prepared *prepared
}

type prepared struct {
	out *supervise.Outcome
	v   *record.Verification
}

func (r *Recorder) hooks() *workspace.Hooks {
	if r.Spec == nil {
		return nil
	}
	return r.Spec.Hooks
}

// Started registers the agent with the relay, when there is one, and keeps its heartbeat; the
// running records were written at launch.
func (r *Recorder) Started(_ context.Context, a *supervise.Attempt, _ int) error {
	if h := r.hooks(); h != nil && h.Relay != nil && r.stopHeartbeat == nil {
		run := &r.Spec.Run
		r.stopHeartbeat = h.Relay.Register(run.SessionName, run.Agent, run.Model, run.Bead, r.Spec.hookEnv(a))
	}
	return nil
}

// Finished runs what comes before the records (the relay's completion, Truthsayer stopped,
// the verifications), writes the final records under the bead's lock, unless a newer attempt
// owns them by now (a --force dispatch replaced this one), and then, with the lock let go,
// runs the workspace's completion hooks. Their failures are shown on console, never returned:
// the outcome is recorded.
func (r *Recorder) Finished(ctx context.Context, a *supervise.Attempt, out *supervise.Outcome, console io.Writer) error {
	console, closeLog := withLog(console, a.LogPath)
	defer closeLog()
	if r.prepared == nil || r.prepared.out != out {
		r.prepared = &prepared{out: out, v: r.beforeRecords(ctx, a, out, console)}
	}
	res, err := r.writeFinal(ctx, a, out, r.prepared.v, console)
	if err != nil || res == nil {
		return err
	}
	r.afterRecords(ctx, a, res, console)
	return nil
}

// writeFinal writes the final records under the bead's lock and returns the result written,
// or nil when the records belong to a newer attempt.
func (r *Recorder) writeFinal(ctx context.Context, a *supervise.Attempt, out *supervise.Outcome, v *record.Verification, console io.Writer) (*record.Result, error) {
	unlock, err := r.Dir.Layout.Lock(ctx, a.Name, 30*time.Second)
	if err == nil {
		defer unlock()
	} // else: write anyway; an outcome left unwritten is worse than a late one
	if cur, err := record.ReadRun(r.Dir.Store.RunPath(a.Name)); err == nil && cur.Attempt != r.Spec.Run.Attempt {
		fmt.Fprintf(console, "supervisor: not recording attempt %d: the records now belong to attempt %d\r\n", r.Spec.Run.Attempt, cur.Attempt)
		return nil, nil
	}
	done, res := Complete(r.Spec.Run, out, v)
	if err := r.store(ctx, &done, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// withLog is console and the attempt's log, where what runs after the agent is shown: without
// tmux, the console is no one's, and the log is where a user looks. The log is appended to only
// if it is still a regular file: never through a link (the agent, or another user, may have put
// one there since the supervisor created it), and never waiting on a named pipe.
func withLog(console io.Writer, path string) (io.Writer, func()) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return console, func() {}
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return console, func() {}
	}
	return io.MultiWriter(console, bestEffort{f}), func() { f.Close() }
}

// bestEffort is a writer whose failures are ignored, so that a full disk under the log does
// not silence the console beside it.
type bestEffort struct{ w io.Writer }

func (b bestEffort) Write(p []byte) (int, error) {
	b.w.Write(p)
	return len(p), nil
}

// beforeRecords runs what dispatch.sh did between the agent's end and the records, and
// returns the verification.
func (r *Recorder) beforeRecords(ctx context.Context, a *supervise.Attempt, out *supervise.Outcome, console io.Writer) *record.Verification {
	h := r.hooks()
	if r.stopHeartbeat != nil {
		r.stopHeartbeat()
		r.stopHeartbeat = nil
	}
	if h != nil && h.Relay != nil {
		code := out.ExitCode
		if out.UnknownExit {
			code = 1
		}
		h.Relay.Completed(ctx, workspace.CompletionOf(&r.Spec.Run, code, out.Finished), r.Spec.hookEnv(a), console)
	}
	if h != nil {
		h.Truthsayer.Stop()
	}
	var ws *record.Verification
	if h != nil && workspaceVerifies(out) {
		var raw []byte
		raw, ws = h.Verify(ctx, a.Dir, a.Name, r.Spec.hookEnv(a), console)
		if raw != nil {
			// verify.sh keeps it in its own workspace's state/results/; the copy here is for
			// a state directory elsewhere (--state-dir), where analyze-runs looks for it.
			if err := fsx.WriteFileAtomic(r.Dir.State().Verify(a.Name), raw, 0o600); err != nil {
				fmt.Fprintf(console, "supervisor: keeping verify.sh's output: %v\r\n", err)
			}
		}
	}
	var own *record.Verification
	if out.Status == record.StatusDone || (out.Status == record.StatusFailed && out.ExitReason()) {
		own = verify(r.Spec, console)
	}
	return combine(ws, own)
}

// afterRecords runs the workspace's completion hooks once the records are final.
func (r *Recorder) afterRecords(ctx context.Context, a *supervise.Attempt, res *record.Result, console io.Writer) {
	h := r.hooks()
	if h == nil {
		return
	}
	h.Validate(ctx, r.Dir.Store.RunPath(a.Name), r.Dir.Store.ResultPath(a.Name), r.Spec.hookEnv(a), console)
	findings := workspace.CountFindings(workspace.TruthsayerLog(r.Dir.Path(), a.Name))
	h.Announce(ctx, workspace.OutcomeOf(res, r.Spec.Run.Model), findings, time.Now(), r.Spec.hookEnv(a), console)
}

// workspaceVerifies says whether the workspace's verify.sh runs for an outcome: when the
// agent's work came to an end of its own (it exited, died of a signal, or could not start) or
// ran out of time, as dispatch.sh verified every end it saw. Not when someone stopped the
// attempt (dispatch kill, --force, the session killed, a signal to the supervisor), who may be
// waiting for the supervisor to let go, nor on a full disk.
func workspaceVerifies(out *supervise.Outcome) bool {
	switch {
	case out.Status == record.StatusDone, out.Status == record.StatusTimeout, out.ExitReason():
		return true
	}
	return out.Reason == supervise.ReasonStartFailed || strings.HasPrefix(out.Reason, "agent-signal-")
}

// combine makes one verification of the workspace's verify.sh and dispatch's own command
// (--verify, or the repository's test_cmd), either of which may be nil: verify.sh's checks fill
// it, the command's verdict is the tests' (a failure of either is a failure), and overall
// fails when either does.
func combine(ws, own *record.Verification) *record.Verification {
	if ws == nil || own == nil {
		if ws == nil {
			return own
		}
		return ws
	}
	v := *ws
	v.Tests = worst(ws.Tests, own.Tests)
	v.Overall = worst(ws.Overall, own.Overall)
	return &v
}

// worst is the worse of two verdicts: fail over pass over skipped over none.
func worst(a, b string) string {
	rank := map[string]int{"": 0, "skipped": 1, "pass": 2, "fail": 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Lost closes the records of a bead whose supervisor is gone, if they still say running. A
// supervisor that kept its outcome (e.Outcome) may have written the run record and not the
// result (results/ unwritable, a full disk): the result is then finished from the run record.
func (r *Recorder) Lost(ctx context.Context, e *supervise.Entry, out *supervise.Outcome) (bool, error) {
	run, err := record.ReadRun(r.Dir.Store.RunPath(e.Name))
	if err != nil {
		return false, nil
	}
	if run.Status != record.StatusRunning {
		return r.finishResult(ctx, e, run)
	}
	if e.Attempt != 0 && e.Attempt != run.Attempt {
		// The entry is an older attempt's; the running record is not its to close, but it has
		// no live supervisor either (the entry would be its own): close it as lost.
		out = &supervise.Outcome{Status: record.StatusFailed, Reason: supervise.ReasonLost, UnknownExit: true,
			Finished: out.Finished, Summary: out.Summary}
	}
	start, hasStart := record.ParseTime(run.StartedAt)
	if out.Finished.IsZero() {
		out.Finished = start
	}
	done, res := Complete(*run, out, nil)
	if out.Reason == supervise.ReasonLost && hasStart && !out.Finished.After(start) {
		// Nothing known of its life but its start (no log): its end is unknown, not 0 s later.
		unknownEnd(&done, &res)
	}
	return true, r.store(ctx, &done, &res)
}

// finishResult writes the result of a run record its supervisor wrote final before it failed
// to write the result, when the supervisor kept that attempt's outcome; it reports whether it
// wrote anything.
func (r *Recorder) finishResult(ctx context.Context, e *supervise.Entry, run *record.Run) (bool, error) {
	if e.Outcome == nil || e.Attempt != run.Attempt {
		return false, nil
	}
	if res, err := record.ReadResult(r.Dir.Store.ResultPath(e.Name)); err == nil && res.Attempt == run.Attempt && res.Status != record.StatusRunning {
		return false, nil
	}
	// The run record holds the outcome as written, verification included: the result is made
	// of it as Complete made both.
	started := *run
	started.Status = record.StatusRunning
	_, res := Complete(started, e.Outcome, run.Verification)
	return true, r.Dir.Store.WriteResult(ctx, &res)
}

func (r *Recorder) write(ctx context.Context, run record.Run, out *supervise.Outcome, v *record.Verification) error {
	done, res := Complete(run, out, v)
	return r.store(ctx, &done, &res)
}

func (r *Recorder) store(ctx context.Context, run *record.Run, res *record.Result) error {
	if err := r.Dir.Store.WriteRun(ctx, run); err != nil {
		return err
	}
	return r.Dir.Store.WriteResult(ctx, res)
}

// verify runs the verification command, if any.
func verify(spec *Spec, console io.Writer) *record.Verification {
	if spec == nil || spec.Verify == "" {
		return nil
	}
	timeout := time.Duration(spec.VerifyTimeout) * time.Second
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	fmt.Fprintf(console, "\r\nsupervisor: verifying: %s\r\n", spec.Verify)
	// The verification command is the user's own configuration (--verify or repos.test_cmd),
	// a shell command line by design; nothing of the prompt reaches it.
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", spec.Verify)
	cmd.Dir, cmd.Env = spec.Attempt.Dir, spec.hookEnv(&spec.Attempt)
	cmd.Stdout, cmd.Stderr = console, console
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	v := &record.Verification{Tests: "pass", Overall: "pass"}
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(console, "supervisor: verification failed: %v\r\n", err)
		v.Tests, v.Overall = "fail", "fail"
	}
	return v
}
