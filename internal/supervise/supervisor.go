package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/creack/pty"
)

// Supervisor runs a tool's attempts, one after another, and serves their control socket.
// Make one with the fields set, Open it, Run each attempt, Close it.
type Supervisor struct {
	Layout Layout
	// Tool owns the attempts (its Recorder is the one Reconcile calls when this process is
	// lost); Name is the bead, worker or loop, which names the entry, the socket and the log.
	Tool, Name string
	// Backend, Socket and Session say where the supervisor runs, for the registry.
	Backend, Socket, Session string
	// Console is where the agent's output is shown live: the tmux pane, or io.Discard.
	Console io.Writer
	// Input is the pane's keyboard (the supervisor's stdin on a terminal), relayed to the
	// agent in raw mode; nil when no one is attached.
	Input *os.File
	// Once says the supervisor runs a single attempt (dispatch's): its registry entry goes as
	// soon as the attempt is recorded, not when the process ends.
	Once bool
	// Signals, when set, is the channel of CatchSignals, taken before the supervisor was
	// made, so that a stop sent while it starts is not lost; Open catches them otherwise.
	Signals chan os.Signal
	// Claims, when above 0, is the attempt of Name a supervisor serving a slot was handed by a
	// starter that has let go of the name's lock and registered the launch (pid 0): Open claims
	// it under the lock (the entry must still be that launch's) and holds the lock until the
	// agent has started and the entry names this process, so that no one judges the attempt
	// lost in between, and the entry is written once for the claim and the agent together.
	// Signals is the serving loop's, and outlives Close.
	Claims int
	// Reserve, when set, is the disk held for the final records, kept by a supervisor serving
	// a slot from attempt to attempt; else a file of the name's is created for each attempt.
	Reserve *Reserve
	// Registered, when set, is called once the running attempt's agent has started and the
	// entry names it (and a claim's lock is let go).
	Registered func()

	mu       sync.Mutex
	claimed  func() error // the name's lock, held from the claim to the agent's registration
	cur      *running
	entry    *Entry
	ln       net.Listener
	sigs     chan os.Signal
	stopping string // a signal asked the whole supervisor to stop: no further attempt runs
	restore  func()
	size     *pty.Winsize
}

// running is the attempt in progress, as the control socket and the key relay see it.
type running struct {
	a       *Attempt
	proc    *agentProc
	screen  *screenSink
	stopReq chan string
	// waitingSince is when the agent began waiting for input (UnixNano; 0: it does not), for
	// the control socket's answers: a bead's supervisor has no Watch to tell it to.
	waitingSince atomic.Int64
}

// Open prepares the supervisor: it becomes the subreaper of what it starts, takes the
// signals that stop an attempt, waits for its starter to let go of the name's lock, registers,
// and listens on the control socket. Everything it sets up is undone by Close.
func (s *Supervisor) Open(ctx context.Context) error {
	if s.Console == nil {
		s.Console = io.Discard
	}
	if err := BecomeSubreaper(); err != nil {
		s.warnf("not a subreaper (%v): processes the agent leaves behind may outlive it", err)
	}
	s.sigs = s.Signals
	if s.sigs == nil {
		s.sigs = CatchSignals()
	}

	s.entry = &Entry{Tool: s.Tool, Name: s.Name, PID: os.Getpid(), Backend: s.Backend, Socket: s.Socket,
		Session: s.Session, Control: s.Layout.SocketPath(s.Name)}
	if s.Claims > 0 {
		if err := s.claim(ctx); err != nil {
			return err
		}
	} else {
		// Registration waits for whoever started the supervisor (it holds the name's lock
		// until it has registered the launch) to let go, so this entry is the last word.
		if unlock, err := s.Layout.Lock(ctx, s.Name, 30*time.Second); err == nil {
			unlock()
		}
		if old, _ := s.Layout.ReadEntry(s.Name); old != nil {
			s.entry.Attempt, s.entry.StartedAt = old.Attempt, old.StartedAt
		}
	}
	ln, err := s.listenControl(ctx)
	if err != nil {
		s.warnf("no control socket: %v", err)
		s.entry.Control = ""
	} else {
		s.ln = ln
		go s.serveControl(ln)
	}
	if s.claimed == nil {
		if err := s.Layout.WriteEntry(s.entry); err != nil {
			s.warnf("%v", err)
		}
	}
	if s.Input != nil {
		s.size = paneSize(s.Input)
		if restore, err := rawInput(s.Input); err == nil {
			s.restore = restore
		}
		go s.relayKeys()
	}
	return nil
}

// ErrNotClaimed is Open's error for an attempt handed to a serving supervisor (Claims) whose
// launch is no longer registered as the starter left it: it was judged lost, or replaced.
var ErrNotClaimed = errors.New("the attempt is no longer the one launched")

// claim takes the name's lock and checks the registry entry is still the launch of attempt
// Claims (pid 0), keeping the lock (releaseClaim lets go of it).
func (s *Supervisor) claim(ctx context.Context) error {
	unlock, err := s.Layout.Lock(ctx, s.Name, 30*time.Second)
	if err != nil {
		return fmt.Errorf("claiming %s: %w", s.Name, err)
	}
	old, _ := s.Layout.ReadEntry(s.Name)
	if old == nil || old.Attempt != s.Claims || old.PID != 0 {
		unlock()
		return fmt.Errorf("claiming attempt %d of %s: %w", s.Claims, s.Name, ErrNotClaimed)
	}
	s.entry.Attempt, s.entry.StartedAt = old.Attempt, old.StartedAt
	s.entry.Start, _ = proc.StartTime(os.Getpid())
	s.claimed = unlock
	return nil
}

// releaseClaim lets go of the lock claim took, once the entry names this process.
func (s *Supervisor) releaseClaim() {
	if s.claimed != nil {
		s.claimed()
		s.claimed = nil
	}
}

// CatchSignals starts catching the signals that stop a supervisor's attempt (and the pane's
// resizes), for a Supervisor's Signals: a process that will become a supervisor calls it
// first thing, so a stop that arrives while it starts is acted on, not fatal.
func CatchSignals() chan os.Signal {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, SignalKill, syscall.SIGWINCH)
	return sigs
}

// Close stops serving, restores the pane's terminal and removes the registry entry, unless a
// newer attempt of the name has registered since (a --force dispatch replaced this one).
func (s *Supervisor) Close() {
	s.releaseClaim()
	if s.ln != nil {
		s.ln.Close()
	}
	if s.Claims == 0 {
		signal.Stop(s.sigs)
	}
	if s.restore != nil {
		s.restore()
	}
	unlock, err := s.Layout.Lock(context.Background(), s.Name, 30*time.Second)
	if err == nil {
		defer unlock()
	}
	if e, _ := s.Layout.ReadEntry(s.Name); e != nil && e.Attempt == s.entry.Attempt && (e.PID == os.Getpid() || e.PID == 0) {
		if e.Outcome == nil {
			s.Layout.RemoveEntry(s.Name)
		}
	}
}

// Stopping returns the reason a signal gave for stopping the whole supervisor, or "": a loop
// that runs attempts one after another ends when it is set.
func (s *Supervisor) Stopping() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// diskCheckEvery is how often the free space is looked at: a statfs every few seconds costs
// nothing measurable, and an agent cannot fill 100 MB much faster.
const diskCheckEvery = 2 * time.Second

// Run runs one attempt to its end and has rec record it. It returns the outcome as recorded.
func (s *Supervisor) Run(ctx context.Context, a *Attempt, rec Recorder) Outcome {
	if r := s.Stopping(); r != "" {
		out := Outcome{Status: StatusFailed, Reason: r, UnknownExit: true, Started: time.Now(), Finished: time.Now()}
		s.record(ctx, a, rec, &out, &bestEffort{w: s.Console})
		return out
	}
	reserve := s.Layout.ReservePath(s.Name)
	hold := func() error { return holdReserve(reserve) }
	if s.Reserve != nil {
		hold = s.Reserve.hold
	}
	if err := hold(); err != nil {
		s.warnf("no disk reserve for the final records: %v", err)
	}
	out := s.run(ctx, a, rec)
	if s.Reserve != nil {
		s.Reserve.free()
	} else {
		os.Remove(reserve)
	}
	if s.Once && s.ln != nil {
		// The agent is gone, and once its end is recorded the name's next supervisor may start
		// at once (a loop's next iteration): it must find the socket's path free, not this
		// one's listener still there, which it would wait for and its starter would dial.
		s.ln.Close()
	}
	// The lines of the end wait for the pane a moment at most: a pane the tmux server is slow
	// to read must not hold the records (and a loop's next iteration) back.
	console := newMirror(s.Console)
	letGo := time.AfterFunc(paneWait, console.letGo)
	defer letGo.Stop()
	s.record(ctx, a, rec, &out, console)
	fmt.Fprintf(console, "\r\n%s: %s (exit %d, %s)\r\n", s.label(), out.Status, out.ExitCode, out.Reason)
	console.finish(paneWait)
	return out
}

// activity is when the agent last printed something, for the inactivity timeout.
type activity struct{ last atomic.Int64 }

func (a *activity) touch() { a.last.Store(time.Now().UnixNano()) }

func (a *activity) Write(p []byte) (int, error) {
	a.touch()
	return len(p), nil
}

// since is how long the agent has been quiet.
func (a *activity) since() time.Duration { return time.Since(time.Unix(0, a.last.Load())) }

func (s *Supervisor) label() string {
	if s.Session != "" {
		return s.Session
	}
	return s.Name
}

// run starts the agent and waits for the first of: its exit, the timeout, a stop (signal,
// control socket, context), the disk running out, a watch's verdict.
func (s *Supervisor) run(ctx context.Context, a *Attempt, rec Recorder) Outcome {
	started := time.Now()
	logf, err := createLog(a.LogPath)
	if err != nil {
		s.warnf("no log: %v", err)
	}
	if logf != nil {
		defer logf.Close()
	}
	last := &tail{max: 64 << 10}
	size := s.size
	if size == nil {
		size = &defaultSize
	}
	scr := newScreenSink(int(size.Cols), int(size.Rows))
	// A dead pane (session killed) or a full disk makes writes fail; the other copies go on.
	logw := newLogWriter(logf)
	defer logw.Flush()
	act := &activity{}
	act.touch()
	// The log first, the pane last (mirror): what the copy read is in the log before it waits
	// for the pane.
	pane := newMirror(s.Console)
	defer pane.finish(paneWait)
	sink := io.MultiWriter(&bestEffort{w: writerOf(logw)}, last, scr, act, pane)

	if a.Terminal {
		a.Env = paneEnv(a.Env, s.Backend == BackendTmux)
	}
	ag, err := startAgent(a, size, sink)
	if err != nil {
		s.releaseClaim()
		fmt.Fprintf(sink, "supervisor: cannot start the agent: %v\r\n", err)
		return Outcome{Status: StatusFailed, ExitCode: 127, Reason: ReasonStartFailed, Started: started,
			Finished: time.Now(), Summary: summarize(last.Bytes())}
	}
	defer scr.Close()
	if s.Input == nil {
		// No pane, so no terminal but the screen model to answer the agent's questions (the
		// cursor position, the terminal's attributes); in a pane, tmux answers them.
		scr.ReplyTo(writerFunc(ag.write))
	}
	cur := &running{a: a, proc: ag, screen: scr, stopReq: make(chan string, 1)}
	s.mu.Lock()
	s.cur = cur
	s.entry.Attempt, s.entry.AgentPID, s.entry.Outcome = a.Number, ag.pid(), nil
	s.entry.AgentStart, _ = proc.StartTime(ag.pid())
	if s.entry.StartedAt == "" || a.Number != s.entry.Attempt {
		s.entry.StartedAt = started.UTC().Format(time.RFC3339)
	}
	s.mu.Unlock()
	// It replaces an entry written durably: Open's, or for a claim the starter's launch.
	s.Layout.rewriteEntry(s.entry)
	s.releaseClaim()
	if s.Registered != nil {
		s.Registered()
	}
	if err := rec.Started(ctx, a, ag.pid()); err != nil {
		s.warnf("recording the start: %v", err)
	}

	var timeout <-chan time.Time
	if a.Timeout > 0 {
		t := time.NewTimer(a.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var idle <-chan time.Time
	var idleTimer *time.Timer
	if a.Inactivity > 0 {
		idleTimer = time.NewTimer(a.Inactivity)
		defer idleTimer.Stop()
		idle = idleTimer.C
	}
	disk := time.NewTicker(diskCheckEvery)
	defer disk.Stop()
	var watchTick <-chan time.Time
	w := &watcher{a: a, scr: scr, started: started, changedAt: started}
	if a.Watch != nil {
		every := a.WatchEvery
		if every <= 0 {
			every = time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		watchTick = t.C
	}
	// Whether the agent waits for input is looked at once its output has been quiet
	// (waiting.go), for a Watch to be told and the control socket to answer (every agent on a
	// terminal: a bead's too, which has no Watch).
	var inputLook <-chan time.Time
	if ag.master != nil {
		t := time.NewTimer(inputQuiet)
		defer t.Stop()
		inputLook, w.inputTimer = t.C, t
	}
	var stoppedAt time.Time // when the agent was told to stop, if it was
	stopWith := func(status, reason string) Outcome {
		// An agent that has exited already ended on its own: its exit is the outcome, not
		// the stop that came after it (a deadline reached as it exits 0 is no timeout).
		if ps, ok := ag.exited(); ok {
			return exited(ps)
		}
		stoppedAt = time.Now()
		// A kill hangs up first, as the originals' (a tmux window or session killed); the
		// other stops (a timeout, a watch, the supervisor's own signal) keep TERM's end.
		out := exited(ag.stop(a.KillGrace, reason == ReasonKilled))
		out.Status, out.Reason = status, reason
		return out
	}

	var out Outcome
	for out.Status == "" {
		select {
		case ps := <-ag.done:
			out = exited(ps)
		case <-timeout:
			if ps, ok := ag.exited(); ok {
				out = exited(ps) // it ended on its own as the deadline came: no timeout
				break
			}
			fmt.Fprintf(sink, "\r\nsupervisor: timeout after %s: stopping the agent\r\n", a.Timeout)
			out = stopWith(StatusTimeout, fmt.Sprintf("watch-timeout-%ds", int64(a.Timeout/time.Second)))
			if out.Status == StatusTimeout {
				out.ExitCode = 124
			}
		case <-idle:
			// The timer is set once and moved on when it fires early: no reset per write.
			if quiet := act.since(); quiet < a.Inactivity {
				idleTimer.Reset(a.Inactivity - quiet)
				continue
			}
			fmt.Fprintf(sink, "\r\nsupervisor: no output for %s: stopping the agent\r\n", a.Inactivity)
			out = stopWith(StatusTimeout, fmt.Sprintf("inactivity-timeout-%ds", int64(a.Inactivity/time.Second)))
			if out.Status == StatusTimeout {
				out.ExitCode = 124
			}
		case reason := <-cur.stopReq:
			fmt.Fprintf(sink, "\r\nsupervisor: %s: stopping the agent\r\n", reason)
			out = stopWith(StatusFailed, reason)
		case <-ctx.Done():
			out = stopWith(StatusFailed, ReasonKilled)
		case sig := <-s.sigs:
			if sig == syscall.SIGWINCH {
				s.resize(cur)
				continue
			}
			reason := signalReason(sig.(syscall.Signal))
			s.mu.Lock()
			s.stopping = reason
			s.mu.Unlock()
			// SignalKill's own name is Go's "user defined signal 1": the log says what it means.
			what := sig.String()
			if sig == SignalKill {
				what = ReasonKilled
			}
			fmt.Fprintf(sink, "\r\nsupervisor: %s: stopping the agent\r\n", what)
			out = stopWith(StatusFailed, reason)
		case <-disk.C:
			if lowDisk(a) {
				fmt.Fprintf(sink, "\r\nsupervisor: less than %d MB free: stopping the agent\r\n", a.MinFreeMB)
				out = stopWith(StatusFailed, ReasonDiskExhausted)
			}
		case <-scr.changed:
			if v := w.look(); v.Stop {
				out = stopWith(orDefault(v.Status, StatusDone), v.Reason)
			} else if v.Note != "" {
				annotate(ctx, rec, a, v.Note)
			}
		case <-inputLook:
			if w.lookInput(ag, act) {
				cur.setWaiting(w.waiting)
				if v := w.look(); v.Stop {
					out = stopWith(orDefault(v.Status, StatusDone), v.Reason)
				} else if v.Note != "" {
					annotate(ctx, rec, a, v.Note)
				}
			}
		case <-watchTick:
			if v := w.look(); v.Stop {
				out = stopWith(orDefault(v.Status, StatusDone), v.Reason)
			} else if v.Note != "" {
				annotate(ctx, rec, a, v.Note)
			}
		}
	}
	out.Started, out.Finished = started, time.Now()
	// What is left of the agent's session, then every process it left behind anywhere, each
	// given the grace period (what is left of it when the agent was stopped, so that a stop
	// takes the grace once) before it is killed.
	syscall.Kill(-ag.pid(), syscall.SIGTERM)
	killAt := time.Now().Add(a.KillGrace)
	if !stoppedAt.IsZero() {
		killAt = stoppedAt.Add(a.KillGrace)
	}
	if n := reapStragglers(killAt); n > 0 {
		out.Stragglers = n
		fmt.Fprintf(sink, "\r\nsupervisor: stopped %d process(es) the agent left behind\r\n", n)
	}
	ag.drain(pane.letGo)
	pane.finish(paneWait)
	if err := logw.Flush(); err != nil {
		s.warnf("the log is incomplete: %v", err)
	}
	s.mu.Lock()
	s.cur = nil
	s.mu.Unlock()
	out.Summary = summarize(last.Bytes())
	return out
}

// record has rec write the outcome. Until it succeeds the outcome stays in the registry
// entry, and the supervisor retries for a while; if it never does, the entry stays for
// Reconcile, which hands the outcome to the recorder as Lost.
func (s *Supervisor) record(ctx context.Context, a *Attempt, rec Recorder, out *Outcome, console io.Writer) {
	s.mu.Lock()
	s.entry.Attempt, s.entry.AgentPID, s.entry.AgentStart, s.entry.Outcome = a.Number, 0, 0, out
	s.mu.Unlock()
	s.Layout.rewriteEntry(s.entry)
	delay := 250 * time.Millisecond
	for try := 1; ; try++ {
		err := rec.Finished(ctx, a, out, console)
		if err == nil {
			break
		}
		fmt.Fprintf(console, "supervisor: recording the outcome: %v\r\n", err)
		if try == recordTries {
			fmt.Fprintf(console, "supervisor: giving up; the outcome is kept in %s for 'reconcile'\r\n", s.Layout.EntryPath(s.Name))
			return
		}
		time.Sleep(delay)
		delay = min(2*delay, 5*time.Second)
	}
	s.mu.Lock()
	s.entry.Outcome = nil
	s.mu.Unlock()
	unlock, err := s.Layout.Lock(ctx, s.Name, 30*time.Second)
	if err == nil {
		defer unlock()
	}
	// Only this supervisor's entry: a newer attempt of the name may have registered since.
	if e, _ := s.Layout.ReadEntry(s.Name); e != nil && e.PID == os.Getpid() {
		if s.Once {
			s.Layout.RemoveEntry(s.Name)
		} else {
			s.Layout.WriteEntry(s.entry)
		}
	}
}

// recordTries is how often a failed final write is tried (about 30 s in all) before the
// outcome is left to Reconcile.
const recordTries = 10

func annotate(ctx context.Context, rec Recorder, a *Attempt, note string) {
	if an, ok := rec.(Annotator); ok {
		an.Annotate(ctx, a, note)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// watcher feeds an attempt's Watch.
type watcher struct {
	a         *Attempt
	scr       *screenSink
	started   time.Time
	hash      uint64
	changedAt time.Time
	// waiting: the agent waits for input (waiting.go), as last looked at; inputTimer says when
	// to look again.
	waiting    bool
	inputTimer *time.Timer
	prompt     promptLook
}

// setWaiting notes whether the agent waits for input now (since now, when it starts to).
func (r *running) setWaiting(waiting bool) {
	var since int64
	if waiting {
		since = time.Now().UnixNano()
	}
	r.waitingSince.Store(since)
}

// lookInput looks at whether the agent waits for input, once its output has been quiet for
// inputQuiet, and sets the timer for the next look. It tells whether that changed.
func (w *watcher) lookInput(ag *agentProc, act *activity) bool {
	quiet := act.since()
	waiting := quiet >= inputQuiet && ag.waitingForInput(w.scr, &w.prompt)
	next := inputLookEvery
	if quiet < inputQuiet {
		next = inputQuiet - quiet
	}
	w.inputTimer.Reset(next)
	changed := waiting != w.waiting
	w.waiting = waiting
	return changed
}

// look hashes the screen, to tell a change of what a person sees from output that redraws the
// same thing, and asks the Watch.
func (w *watcher) look() Verdict {
	if w.a.Watch == nil {
		return Verdict{}
	}
	now := time.Now()
	h := w.scr.Hash()
	changed := h != w.hash
	if changed {
		w.hash, w.changedAt = h, now
	}
	return w.a.Watch(&WatchState{Screen: w.scr.Lines, Changed: changed, SinceChange: now.Sub(w.changedAt),
		Elapsed: now.Sub(w.started), WaitingInput: w.waiting})
}

// relayKeys passes the pane's keys to the running agent's terminal; between attempts they are
// dropped.
func (s *Supervisor) relayKeys() {
	buf := make([]byte, 4096)
	for {
		n, err := s.Input.Read(buf)
		if n > 0 {
			s.mu.Lock()
			cur := s.cur
			s.mu.Unlock()
			if cur != nil {
				cur.proc.write(buf[:n])
			}
		}
		if err != nil {
			return
		}
	}
}

// resize makes the agent's terminal and screen follow the pane's size.
func (s *Supervisor) resize(cur *running) {
	if s.Input == nil {
		return
	}
	size := paneSize(s.Input)
	if size == nil {
		return
	}
	s.mu.Lock()
	s.size = size
	s.mu.Unlock()
	cur.proc.resize(size)
	cur.screen.Resize(int(size.Cols), int(size.Rows))
}

func (s *Supervisor) warnf(format string, args ...any) {
	fmt.Fprintf(s.Console, "supervisor: warning: "+format+"\r\n", args...)
}

// paneEnv makes the agent's environment look like a pane's: TERM set as tmux sets it (the
// supervisor's own, in a pane), and the tmux variables of the pane it runs in.
func paneEnv(env []string, inTmux bool) []string {
	term := "xterm-256color" // what the screen model emulates when no pane is attached
	if t := os.Getenv("TERM"); inTmux && t != "" {
		term = t
	}
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		if strings.HasPrefix(kv, "TERM=") || (inTmux && (strings.HasPrefix(kv, "TMUX=") || strings.HasPrefix(kv, "TMUX_PANE="))) {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "TERM="+term)
	if inTmux {
		for _, k := range []string{"TMUX", "TMUX_PANE"} {
			if v, ok := os.LookupEnv(k); ok {
				out = append(out, k+"="+v)
			}
		}
	}
	return out
}

// createLog creates the attempt's log fresh: whatever was at path (the previous attempt's log,
// already archived, or a link planted there) is removed, never followed or truncated.
func createLog(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	if err := statedir.MkdirFor(path); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
}

func signalReason(s syscall.Signal) string {
	switch s {
	case syscall.SIGHUP:
		return ReasonSessionKilled
	case SignalKill:
		return ReasonKilled
	}
	return "supervisor-signal-" + SignalName(s)
}

// SignalName is a signal's conventional name (SIGTERM), or SIG<n>.
func SignalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2"}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("SIG%d", int(s))
}

// writerFunc makes a write function an io.Writer.
type writerFunc func([]byte) error

func (f writerFunc) Write(p []byte) (int, error) {
	if err := f(p); err != nil {
		return 0, err
	}
	return len(p), nil
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

// writerOf is w as an io.Writer, nil when there is no log (a nil *logWriter in an interface
// would not be nil).
func writerOf(w *logWriter) io.Writer {
	if w == nil {
		return nil
	}
	return w
}

// ConsoleOf is where a supervisor whose stdout is f shows the agent's output: f, or nothing
// when f is /dev/null (a detached supervisor), which saves a write per chunk.
func ConsoleOf(f *os.File) io.Writer {
	fi, err := f.Stat()
	null, nerr := os.Stat(os.DevNull)
	if err == nil && nerr == nil && os.SameFile(fi, null) {
		return io.Discard
	}
	return f
}
