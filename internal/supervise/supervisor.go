package supervise

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// Reasons an outcome records, besides "agent-exit-<code>", "agent-signal-<SIG>" and
// "watch-timeout-<N>s".
const (
	ReasonStartFailed   = "agent-start-failed"
	ReasonDiskExhausted = "disk-space-exhausted"
	ReasonSessionKilled = "session-killed" // SIGHUP: the tmux session or server went away
	ReasonKilled        = "killed"         // SIGUSR1: dispatch kill
	ReasonLost          = "supervisor-lost"
)

// SignalKill is what `dispatch kill` sends a supervisor: it stops the agent and records "killed".
const SignalKill = syscall.SIGUSR1

// Outcome is how an attempt ended.
type Outcome struct {
	Status       string
	ExitCode     int64
	Reason       string
	Finished     time.Time
	Summary      string
	Verification *record.Verification
	// UnknownExit is set when the exit code cannot be known (the supervisor was lost).
	UnknownExit bool
}

// diskCheckEvery is how often the free space is looked at: a statfs every few seconds costs
// nothing measurable, and an agent cannot fill 100 MB much faster.
const diskCheckEvery = 2 * time.Second

// reserveSize is disk space the supervisor holds from the start and frees just before writing the
// final records, so that an agent that fills the disk cannot keep its outcome from being written.
const reserveSize = 256 << 10

// Supervise runs the attempt spec describes to its end and writes the final records. term is the
// terminal (the tmux pane) where the agent's output is shown live; it may be io.Discard.
func Supervise(spec *Spec, term io.Writer) error {
	l := Layout{Dir: spec.StateDir}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, SignalKill)
	defer signal.Stop(sigs)

	// Registration waits for whoever started the supervisor (dispatch holds the bead's lock
	// until it has registered the launch) to let go, so this entry is the last word.
	if unlock, err := l.LockBead(context.Background(), spec.Bead, 30*time.Second); err == nil {
		unlock()
	}
	entry := &Entry{Bead: spec.Bead, Attempt: spec.Run.Attempt, PID: os.Getpid(), Backend: spec.Backend,
		Socket: spec.Socket, Session: spec.Session, StartedAt: spec.Run.StartedAt}
	if err := l.WriteEntry(entry); err != nil {
		fmt.Fprintf(term, "supervisor: warning: %v\n", err)
	}
	reserve := l.EntryPath(spec.Bead) + ".reserve"
	if err := holdReserve(reserve); err != nil {
		fmt.Fprintf(term, "supervisor: warning: no disk reserve for the final records: %v\n", err)
	}

	out := run(spec, l, entry, sigs, term)

	os.Remove(reserve)
	err := Finalize(l, spec, out)
	if err != nil {
		fmt.Fprintf(term, "supervisor: %v\n", err)
	}
	fmt.Fprintf(term, "\n%s: %s (exit %d, %s)\n", spec.Session, out.Status, out.ExitCode, out.Reason)
	return err
}

// run starts the agent and waits for the first of: its exit, the timeout, a signal to the
// supervisor, the disk running out.
func run(spec *Spec, l Layout, entry *Entry, sigs <-chan os.Signal, term io.Writer) Outcome {
	os.MkdirAll(filepath.Dir(l.LogPath(spec.Bead)), 0o700)
	logf, err := os.OpenFile(l.LogPath(spec.Bead), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		fmt.Fprintf(term, "supervisor: warning: no log: %v\n", err)
		logf = nil
	}
	if logf != nil {
		defer logf.Close()
	}
	last := &tail{max: 64 << 10}
	// A dead pane (session killed) or a full disk makes writes fail; the other copies go on.
	sink := io.MultiWriter(&bestEffort{w: term}, &bestEffort{w: fileWriter(logf)}, last)

	agent, wait, err := start(spec, sink)
	if err != nil {
		fmt.Fprintf(sink, "supervisor: cannot start the agent: %v\n", err)
		return Outcome{Status: record.StatusFailed, ExitCode: 127, Reason: ReasonStartFailed,
			Finished: time.Now(), Summary: Summary(last.Bytes(), 500)}
	}
	entry.AgentPID = agent.Process.Pid
	entry.AgentStart, _ = ProcessStart(agent.Process.Pid)
	l.WriteEntry(entry)

	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout.D())
		defer t.Stop()
		timeout = t.C
	}
	disk := time.NewTicker(diskCheckEvery)
	defer disk.Stop()

	var out Outcome
	for out.Status == "" {
		select {
		case ps := <-wait.done:
			out = exited(ps)
		case <-timeout:
			fmt.Fprintf(sink, "\nsupervisor: timeout after %ds: stopping the agent\n", spec.Timeout)
			stop(agent, wait, spec.KillGrace.D())
			out = Outcome{Status: record.StatusTimeout, ExitCode: 124, Reason: fmt.Sprintf("watch-timeout-%ds", spec.Timeout)}
		case sig := <-sigs:
			s := sig.(syscall.Signal)
			fmt.Fprintf(sink, "\nsupervisor: %v: stopping the agent\n", s)
			ps := stop(agent, wait, spec.KillGrace.D())
			out = exited(ps)
			out.Status, out.Reason = record.StatusFailed, signalReason(s)
		case <-disk.C:
			if lowDisk(spec) {
				fmt.Fprintf(sink, "\nsupervisor: less than %d MB free: stopping the agent\n", spec.MinFreeMB)
				ps := stop(agent, wait, spec.KillGrace.D())
				out = exited(ps)
				out.Status, out.Reason = record.StatusFailed, ReasonDiskExhausted
			}
		}
	}
	out.Finished = time.Now()
	// Stragglers the agent left in its process group would hold the output pipe open.
	syscall.Kill(-agent.Process.Pid, syscall.SIGTERM)
	wait.drain()
	if out.Status == record.StatusDone || (out.Status == record.StatusFailed && isExitReason(out.Reason)) {
		out.Verification = verify(spec, sink)
	}
	out.Summary = Summary(last.Bytes(), 500)
	return out
}

// waiter collects the agent's exit and the end of its output.
type waiter struct {
	done   chan *os.ProcessState
	copied chan struct{}
	pipe   *os.File
}

// drain waits for the output copy to reach the end, but not for long: a grandchild that
// inherited the pipe could hold it open forever.
func (w *waiter) drain() {
	select {
	case <-w.copied:
	case <-time.After(time.Second):
		w.pipe.SetReadDeadline(time.Now())
		<-w.copied
	}
	w.pipe.Close()
}

// start launches the agent in its own process group with its output on a pipe copied to sink.
func start(spec *Spec, sink io.Writer) (*exec.Cmd, *waiter, error) {
	if len(spec.Argv) == 0 {
		return nil, nil, errors.New("empty command line")
	}
	if spec.PromptFile != "" {
		os.MkdirAll(filepath.Dir(spec.PromptFile), 0o700)
		if err := os.WriteFile(spec.PromptFile, []byte(spec.Prompt), 0o600); err != nil {
			return nil, nil, err
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir, cmd.Env = spec.Dir, spec.Env
	cmd.Stdout, cmd.Stderr = pw, pw
	// Its own process group, so a timeout or kill reaches everything the agent started; and
	// killed with the supervisor, so no agent outlives the process that records it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stdin io.WriteCloser
	if spec.Stdin {
		if stdin, err = cmd.StdinPipe(); err != nil {
			return nil, nil, err
		}
	}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, nil, err
	}
	pw.Close()
	if stdin != nil {
		go func() {
			io.WriteString(stdin, spec.Prompt)
			stdin.Close() // EOF ends the prompt, as `echo "$prompt" | claude -p` did
		}()
	}
	w := &waiter{done: make(chan *os.ProcessState, 1), copied: make(chan struct{}), pipe: pr}
	go func() {
		io.Copy(sink, pr)
		close(w.copied)
	}()
	go func() {
		ps, _ := cmd.Process.Wait()
		w.done <- ps
	}()
	return cmd, w, nil
}

// stop sends the agent's process group SIGTERM, then SIGKILL after grace, and returns its end.
func stop(cmd *exec.Cmd, w *waiter, grace time.Duration) *os.ProcessState {
	pgid := cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case ps := <-w.done:
		return ps
	case <-time.After(grace):
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	return <-w.done
}

// exited turns the agent's end into an outcome: done only for exit 0.
func exited(ps *os.ProcessState) Outcome {
	if ps == nil {
		return Outcome{Status: record.StatusFailed, ExitCode: 1, Reason: "agent-wait-failed"}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		return Outcome{Status: record.StatusFailed, ExitCode: 128 + int64(sig), Reason: "agent-signal-" + signalName(sig)}
	}
	code := int64(ps.ExitCode())
	status := record.StatusFailed
	if code == 0 {
		status = record.StatusDone
	}
	return Outcome{Status: status, ExitCode: code, Reason: fmt.Sprintf("agent-exit-%d", code)}
}

func isExitReason(r string) bool { return len(r) > 11 && r[:11] == "agent-exit-" }

func signalReason(s syscall.Signal) string {
	switch s {
	case syscall.SIGHUP:
		return ReasonSessionKilled
	case SignalKill:
		return ReasonKilled
	}
	return "supervisor-signal-" + signalName(s)
}

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2"}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("SIG%d", int(s))
}

// lowDisk reports whether the state directory or the working directory has less free space
// than the floor.
func lowDisk(spec *Spec) bool {
	if spec.MinFreeMB <= 0 {
		return false
	}
	for _, dir := range []string{spec.StateDir, spec.Dir} {
		if free, err := FreeMB(dir); err == nil && free < spec.MinFreeMB {
			return true
		}
	}
	return false
}

// FreeMB is the space available to an unprivileged user on dir's file system, in MB.
func FreeMB(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize) / (1 << 20), nil
}

// holdReserve takes reserveSize bytes of disk in path. fallocate reserves real blocks even on
// file systems that compress or deduplicate; where it is not supported, bytes that do not
// compress are written instead.
func holdReserve(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, reserveSize); err == nil {
		return nil
	}
	noise := make([]byte, reserveSize)
	rand.Read(noise)
	if _, err := f.Write(noise); err != nil {
		return err
	}
	return f.Sync()
}

// verify runs the verification command, if any, after the agent ended on its own.
func verify(spec *Spec, sink io.Writer) *record.Verification {
	if spec.Verify == "" {
		return nil
	}
	timeout := spec.VerifyTimeout.D()
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	fmt.Fprintf(sink, "\nsupervisor: verifying: %s\n", spec.Verify)
	// The verification command is the user's own configuration (--verify or repos.test_cmd), a
	// shell command line by design; nothing of the prompt reaches it.
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", spec.Verify)
	cmd.Dir, cmd.Env = spec.Dir, spec.Env
	cmd.Stdout, cmd.Stderr = sink, sink
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	v := &record.Verification{Tests: "pass", Overall: "pass"}
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(sink, "supervisor: verification failed: %v\n", err)
		v.Tests, v.Overall = "fail", "fail"
	}
	return v
}

// bestEffort passes writes on until the first error, then drops them: one broken destination
// must not stop the output reaching the others.
type bestEffort struct {
	w      io.Writer
	broken bool
}

func (b *bestEffort) Write(p []byte) (int, error) {
	if b.w != nil && !b.broken {
		if _, err := b.w.Write(p); err != nil {
			b.broken = true
		}
	}
	return len(p), nil
}

func fileWriter(f *os.File) io.Writer {
	if f == nil {
		return nil
	}
	return f
}
