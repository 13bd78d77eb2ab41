package attempt

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

// Recorder writes a dispatched attempt's run and result records: the supervisor's side of the
// contract for dispatch. Spec is nil for a Recorder that only closes lost attempts.
type Recorder struct {
	Dir  Dir
	Spec *Spec
}

// Started needs no write: the running records were written at launch.
func (r *Recorder) Started(context.Context, *supervise.Attempt, int) error { return nil }

// Finished runs the verification when the agent ended on its own, then writes the final
// records under the bead's lock, unless a newer attempt owns them by now (a --force dispatch
// replaced this one).
func (r *Recorder) Finished(ctx context.Context, a *supervise.Attempt, out *supervise.Outcome, console io.Writer) error {
	var v *record.Verification
	if out.Status == record.StatusDone || (out.Status == record.StatusFailed && out.ExitReason()) {
		v = verify(r.Spec, console)
	}
	unlock, err := r.Dir.Layout.Lock(ctx, a.Name, 30*time.Second)
	if err == nil {
		defer unlock()
	} // else: write anyway; an outcome left unwritten is worse than a late one
	if cur, err := record.ReadRun(r.Dir.Store.RunPath(a.Name)); err == nil && cur.Attempt != r.Spec.Run.Attempt {
		fmt.Fprintf(console, "supervisor: not recording attempt %d: the records now belong to attempt %d\r\n", r.Spec.Run.Attempt, cur.Attempt)
		return nil
	}
	return r.write(ctx, r.Spec.Run, out, v)
}

// Lost closes the records of a bead whose supervisor is gone, if they still say running.
func (r *Recorder) Lost(ctx context.Context, e *supervise.Entry, out *supervise.Outcome) (bool, error) {
	run, err := record.ReadRun(r.Dir.Store.RunPath(e.Name))
	if err != nil || run.Status != record.StatusRunning {
		return false, nil
	}
	if e.Attempt != 0 && e.Attempt != run.Attempt {
		// The entry is an older attempt's; the running record is not its to close, but it has
		// no live supervisor either (the entry would be its own): close it as lost.
		out = &supervise.Outcome{Status: record.StatusFailed, Reason: supervise.ReasonLost, UnknownExit: true,
			Finished: out.Finished, Summary: out.Summary}
	}
	if out.Finished.IsZero() {
		// Nothing known of its life but its start.
		out.Finished, _ = record.ParseTime(run.StartedAt)
	}
	return true, r.write(ctx, *run, out, nil)
}

func (r *Recorder) write(ctx context.Context, run record.Run, out *supervise.Outcome, v *record.Verification) error {
	done, res := Complete(run, out, v)
	if err := r.Dir.Store.WriteRun(ctx, &done); err != nil {
		return err
	}
	return r.Dir.Store.WriteResult(ctx, &res)
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
	cmd.Dir, cmd.Env = spec.Attempt.Dir, spec.Attempt.Env
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
