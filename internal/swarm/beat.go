package swarm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/worker"
)

// beater types a worker's heartbeat from the worker's own supervisor. Its look runs on the
// supervisor's Watch (every second and on every screen change): it reads heartbeats/<worker>.json
// at most once a second and, when a beat is due, the heartbeat active and the agent idle (its
// profile's busy and waiting patterns absent, the screen still for a few seconds), types the
// message and Enter through the control socket, as `swarm send --raw` does (under the
// worker's send lock, so a beat never interleaves with a send). A beat due while the agent is
// busy or asks a question waits until it is idle. Everything that touches a file or the
// socket runs on one goroutine at a time, off the supervisor's loop.
type beater struct {
	s       *Swarm
	name    string
	started string // the worker's incarnation
	pid     int64  // this supervisor: the heartbeat's monitor_pid

	lastLook time.Time
	created  string // the created_at of the heartbeat seen last: a new one starts afresh

	mu sync.Mutex
	// resetAt restarts the interval, as the Python swarm's daemon did while a heartbeat was
	// paused (the next beat a full interval after resume) and when the last beat still stood
	// unconsumed on the agent's input line.
	resetAt time.Time

	busy atomic.Bool // a goroutine is at work

	// namedAt is when the heartbeat file was last seen naming this supervisor (unix nanos).
	namedAt atomic.Int64
}

func newBeater(s *Swarm, name, started string) *beater {
	return &beater{s: s, name: name, started: started, pid: int64(os.Getpid())}
}

// lookEvery is how often the heartbeat file is read.
const lookEvery = time.Second

// look is called by the Watch with the agent's activity and screen.
func (b *beater) look(activity string, lines []string, now time.Time) {
	if b == nil || now.Sub(b.lastLook) < lookEvery {
		return
	}
	b.lastLook = now
	hb, err := b.s.Heartbeat(b.name)
	if err != nil || hb == nil {
		return
	}
	b.noteNamed(hb, now)
	if hb.CreatedAt != b.created {
		b.created = hb.CreatedAt
		b.setReset(time.Time{})
	}
	switch hb.Status {
	case worker.HeartbeatPaused:
		b.setReset(now)
		b.claim(hb)
		return
	case worker.HeartbeatActive:
	default:
		return
	}
	if exp, ok := hb.Expires(); ok && !now.Before(exp) {
		b.async(func() { b.settle(hb.CreatedAt, worker.HeartbeatExpired) })
		return
	}
	if !b.claim(hb) {
		return
	}
	due, ok := hb.NextBeat()
	if !ok {
		return
	}
	if r := b.reset(); !r.IsZero() {
		if d := r.Add(hb.Interval()); d.After(due) {
			due = d
		}
	}
	if now.Before(due) || activity != worker.ActivityIdle {
		return
	}
	if last := tail(lines, 1); len(last) == 1 && strings.Contains(last[0], hb.Message) {
		b.setReset(now) // the last beat is still on the input line: not consumed, none more
		return
	}
	seen := strings.Join(lines, "\n")
	b.async(func() { b.beat(hb, seen) })
}

func (b *beater) setReset(t time.Time) {
	b.mu.Lock()
	b.resetAt = t
	b.mu.Unlock()
}

func (b *beater) reset() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resetAt
}

// async runs fn on the beater's goroutine unless one is at work (the next look tries again).
func (b *beater) async(fn func()) {
	if !b.busy.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer b.busy.Store(false)
		fn()
	}()
}

// claim records this supervisor as the heartbeat's monitor_pid, unless another live monitor
// (a Python swarm's daemon, for a heartbeat it started) has it: then that one beats, and
// claim returns false.
func (b *beater) claim(hb *worker.Heartbeat) bool {
	if hb.MonitorPID != nil && *hb.MonitorPID == b.pid {
		return true
	}
	if hb.MonitorPID != nil && pythonMonitor(int(*hb.MonitorPID)) {
		return false
	}
	created := hb.CreatedAt
	b.async(func() {
		b.s.UpdateHeartbeat(context.Background(), b.name, func(cur *worker.Heartbeat) (*worker.Heartbeat, error) {
			if cur == nil || cur.CreatedAt != created || !cur.Live() || (cur.MonitorPID != nil && *cur.MonitorPID == b.pid) {
				return nil, nil
			}
			pid := b.pid
			cur.MonitorPID = &pid
			return cur, nil
		})
	})
	return true
}

// pythonMonitor reports whether pid is a live Python swarm heartbeat daemon (a process whose
// command line names swarm and is not one of ours).
func pythonMonitor(pid int) bool {
	if pid <= 0 || pid == os.Getpid() || syscall.Kill(pid, 0) != nil {
		return false
	}
	args, err := proc.Args(pid) // bounded: a command line can be as long as the kernel allows
	if err != nil {
		return false
	}
	cmdline := strings.Join(args, "\x00")
	return strings.Contains(cmdline, "python") && strings.Contains(cmdline, "swarm")
}

// settle gives the heartbeat created at created the status status (expired), if it is still
// live.
func (b *beater) settle(created, status string) {
	b.s.UpdateHeartbeat(context.Background(), b.name, func(cur *worker.Heartbeat) (*worker.Heartbeat, error) {
		if cur == nil || cur.CreatedAt != created || !cur.Live() {
			return nil, nil
		}
		cur.Status, cur.MonitorPID = status, nil
		return cur, nil
	})
}

// beatWait bounds a beat: the send lock (a long send holds it), the text, the echo, Enter.
const beatWait = 30 * time.Second

// errScreenChanged: the agent's screen changed between the judgement "idle" and the beat.
var errScreenChanged = errors.New("the screen changed: no beat")

// beat types hb's message and Enter, then records the beat, if the heartbeat is still the
// same and active, and the screen still the one judged idle (seen) once the send lock is
// held: a send that held the lock meanwhile (or output) makes the agent busy again.
func (b *beater) beat(hb *worker.Heartbeat, seen string) {
	st, err := b.s.reg.Load()
	if err != nil {
		return
	}
	w := st.Get(b.name)
	if w == nil || w.Started != b.started {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), beatWait)
	defer cancel()
	// Warnings (an agent that does not echo) would go to the pane: they are not said.
	quiet := func(string, ...any) {}
	unchanged := func(ctl *supervise.Control) error {
		r, err := ctl.Do(supervise.Request{Op: supervise.OpScreen, Lines: screenLookAll})
		if err != nil {
			return err
		}
		if strings.Join(r.Screen, "\n") != seen {
			return errScreenChanged
		}
		return nil
	}
	err = b.s.send(ctx, w, hb.Message, false, true, unchanged, quiet)
	switch {
	case errors.Is(err, errScreenChanged):
		return // judged again at the next look
	case err != nil:
		b.setReset(time.Now()) // the agent is ending, or its screen is gone: try after an interval
		return
	}
	at := worker.HeartbeatTime(time.Now())
	b.s.UpdateHeartbeat(ctx, b.name, func(cur *worker.Heartbeat) (*worker.Heartbeat, error) {
		if cur == nil || cur.CreatedAt != hb.CreatedAt || cur.Status != worker.HeartbeatActive {
			return nil, nil
		}
		pid := b.pid
		cur.LastBeatAt, cur.BeatCount, cur.MonitorPID = &at, cur.BeatCount+1, &pid
		return cur, nil
	})
}

// namesMe reports whether a live heartbeat records this supervisor as its monitor_pid.
func (b *beater) namesMe() bool {
	hb, err := b.s.Heartbeat(b.name)
	return err == nil && b.noteNamed(hb, time.Now())
}

// noteNamed reports whether hb is live and names this supervisor, and notes when it did.
func (b *beater) noteNamed(hb *worker.Heartbeat, now time.Time) bool {
	named := hb != nil && hb.Live() && hb.MonitorPID != nil && *hb.MonitorPID == b.pid
	if named {
		b.namedAt.Store(now.UnixNano())
	}
	return named
}

// releaseGrace: a SIGTERM handled this soon after the heartbeat stopped naming this
// supervisor is taken for the signal of the command that released it (on a loaded machine
// the signal is read after the command wrote the file).
const releaseGrace = 5 * time.Second

// fromPythonHeartbeat reports whether a SIGTERM just received came from a Python swarm's
// `heartbeat stop` or `heartbeat start --force` for this worker: such a command runs, and the
// heartbeat stops naming this supervisor before it ends (at most 10 s are given to it).
func (b *beater) fromPythonHeartbeat() bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !b.namesMe() {
			return true
		}
		if !pythonHeartbeatRunning(b.name) {
			return !b.namesMe()
		}
	}
	return false
}

// pythonHeartbeatRunning reports whether a Python swarm `heartbeat` command naming worker
// runs: its interpreter's command line holds "heartbeat" and the worker's name.
func pythonHeartbeatRunning(name string) bool {
	pids, err := fsx.Names("/proc", func(n string) (string, bool) { return n, n != "" && strings.Trim(n, "0123456789") == "" })
	if err != nil {
		return false
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		args, err := proc.Args(pid)
		if err != nil {
			continue
		}
		if len(args) < 3 || !strings.Contains(filepath.Base(args[0]), "python") {
			continue
		}
		hasVerb, hasName := false, false
		for _, a := range args[1:] {
			hasVerb = hasVerb || a == "heartbeat"
			hasName = hasName || a == name
		}
		if hasVerb && hasName {
			return true
		}
	}
	return false
}

// filterSignals passes the supervisor's signals on, except the SIGTERM of a Python swarm's
// `heartbeat stop` or `heartbeat start --force`: they signal the recorded monitor_pid, which is
// this supervisor, and then record the heartbeat stopped or replaced. That is no stop of the
// worker, and is dropped. Any other SIGTERM passes at once. (A SIGTERM of someone else within
// seconds of a heartbeat stop is dropped too: swarm kill sends another signal.)
func (b *beater) filterSignals(in <-chan os.Signal, out chan<- os.Signal) {
	for sig := range in {
		if sig == syscall.SIGTERM {
			named := b.namesMe()
			if named && b.fromPythonHeartbeat() {
				continue
			}
			if !named && time.Since(time.Unix(0, b.namedAt.Load())) < releaseGrace+lookEvery {
				continue // released just before the signal was read
			}
		}
		out <- sig
	}
}
