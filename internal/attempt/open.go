package attempt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
	"golang.org/x/sys/unix"
)

// Where says where a bead's supervisor runs: in the session of a tmux server, or detached.
type Where struct {
	Backend string // supervise.BackendTmux or BackendProcess
	Tmux    *tmux.Client
	Session string
	// KillGrace is how long a replaced supervisor is given to stop its agent.
	KillGrace time.Duration
}

// Opened is an attempt opened under its bead's lock: nothing else touches the bead until
// Close. Number is its attempt number; Previous is the attempt before it, archived.
type Opened struct {
	Dir      Dir
	Bead     string
	Number   int
	Previous *record.Run
	// Aside is set when the previous run record could not be read: it was set aside (with the
	// result and the log it had) in the attempts archive, and Unreadable says why.
	Aside      *record.Aside
	Unreadable error
	where      Where
	unlock     func() error
}

// Close lets go of the bead's lock.
func (o *Opened) Close() {
	if o.unlock != nil {
		o.unlock()
		o.unlock = nil
	}
}

// ErrRunning is returned by Open when the bead's agent is still at work and force is not set.
var ErrRunning = errors.New("still running")

// Refusal is returned by OpenWithin for an attempt over the limit, before anything of the bead
// was touched: no record written (a finished one is never rewritten as a refusal), no live
// agent stopped, nothing archived.
type Refusal struct {
	Bead       string
	MaxRetries int
	// Last is the bead's last attempt: its run record (nil when it could not be read) and its
	// result record (nil when there is none).
	Last       *record.Run
	LastResult *record.Result
	// Running says its agent is still at work (a --force dispatch would have replaced it).
	Running bool
}

// Error is dispatch.sh's words for it.
func (r *Refusal) Error() string {
	return fmt.Sprintf("max retries reached for bead '%s' (%d)", r.Bead, r.MaxRetries)
}

// ReasonReplaced is the reason of an attempt a --force dispatch replaced whose supervisor could
// not record its own end (it did not stop when asked, or died on the way): it ends when it was
// replaced.
const ReasonReplaced = "replaced"

// Open is OpenWithin with no limit on the attempts.
func Open(ctx context.Context, d Dir, bead string, where Where, force bool) (*Opened, error) {
	return OpenWithin(ctx, d, bead, where, force, 0)
}

// OpenWithin takes bead's lock and makes sure no supervisor of an earlier attempt is alive: one
// whose records are final is cleared away; a running one is ErrRunning, unless force, which
// stops it and waits for it to record its end (and kills it if it does not, closing its attempt
// as replaced). A predecessor whose supervisor is gone without recording its end is closed
// (supervisor-lost). Then it archives the previous attempt's records and log in
// attempts/<bead>/ and numbers the new attempt. The state directory is checked first
// (statedir.Dir.Check): nothing is written into a directory that is a link or another user's.
//
// An attempt over maxRetries (0: no limit) is a *Refusal, found before anything is touched: a
// live agent is not stopped, even with force, and no record is written or archived.
//
// A previous run record no reader can read (not JSON, a field of the wrong type) is set aside
// in the attempts archive (record.SetAside, with the bead's result and log beside it, copied),
// and the attempt is numbered after the highest one known otherwise (the result's, the
// archive's), 1 when none is: as dispatch.sh, which read no attempt from it, numbered it 1.
func OpenWithin(ctx context.Context, d Dir, bead string, where Where, force bool, maxRetries int) (*Opened, error) {
	o := &Opened{Dir: d, Bead: bead, Number: 1, where: where}
	if err := makeStateDirs(d); err != nil {
		return nil, err
	}
	if err := o.lockAlone(ctx, force, maxRetries); err != nil {
		return nil, err
	}
	if err := o.takeNumber(ctx, maxRetries); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// lockAlone takes the bead's lock, held in o until Close, once no supervisor of an earlier
// attempt is alive: a running one is stopped (with force), and killed if it does not stop.
func (o *Opened) lockAlone(ctx context.Context, force bool, maxRetries int) error {
	replaced := false
	for try := 0; ; try++ {
		unlock, err := o.Dir.Layout.Lock(ctx, o.Bead, 15*time.Second)
		if errors.Is(err, fsx.ErrLocked) {
			return fmt.Errorf("another dispatch of %s holds its lock; retry in a moment", o.Bead)
		}
		if err != nil {
			return err
		}
		live, entry := o.alive(ctx)
		if !live {
			o.unlock = unlock
			// A predecessor whose supervisor is gone without recording its end is closed
			// now, so that it is archived as what it was, not as running for ever.
			if _, err := reconcileLocked(ctx, o.Dir, o.where.Tmux, o.Bead, o.where.Session, replaced); err != nil {
				o.Close()
				return fmt.Errorf("closing the previous attempt of %s: %w", o.Bead, err)
			}
			return nil
		}
		terminal, err := o.mayReplace(try, force, maxRetries)
		// The old supervisor needs the lock to write its final records: let go while it stops
		// (or, refused, for good).
		unlock()
		if err != nil {
			return err
		}
		if err := o.stopPredecessor(ctx, try, entry); err != nil {
			return err
		}
		replaced = !terminal
	}
}

// mayReplace judges the live predecessor of the bead, under its lock: terminal when its records
// are final. One at work is ErrRunning without force.
func (o *Opened) mayReplace(try int, force bool, maxRetries int) (terminal bool, err error) {
	c := o.count()
	// Final if either record says so, as dispatch.sh judged a session stale.
	terminal = c.prev != nil && c.prev.Status != record.StatusRunning
	if c.res != nil && c.res.Status != record.StatusRunning {
		terminal = true
	}
	if !terminal && !force {
		attempt := 0
		if c.prev != nil {
			attempt = c.prev.Attempt
		}
		return false, fmt.Errorf("%s is %w (attempt %d); pass --force to replace it, or run 'dispatch wait %s'", o.where.Session, ErrRunning, attempt, o.Bead)
	}
	if try == 0 && maxRetries > 0 && c.number > maxRetries {
		// Refused before the live agent is stopped: a refusal must leave it at work.
		return false, &Refusal{Bead: o.Bead, MaxRetries: maxRetries, Last: c.prev, LastResult: c.res, Running: !terminal}
	}
	return terminal, nil
}

// stopPredecessor stops the live supervisor of the bead's earlier attempt, the lock let go:
// asked first, killed on the second try, given up on the third.
func (o *Opened) stopPredecessor(ctx context.Context, try int, entry *supervise.Entry) error {
	where := o.where
	switch try {
	case 0:
		Stop(ctx, where.Tmux, entry, where.Session, syscall.SIGHUP)
		o.waitGone(ctx, where.KillGrace+5*time.Second)
	case 1:
		// It did not stop (stopped, or stuck), so it cannot record its own end either:
		// killed, and its attempt closed as replaced once it is gone.
		kill(ctx, where.Tmux, entry, where.Session)
		o.waitGone(ctx, 5*time.Second)
	default:
		return fmt.Errorf("%s did not stop, even killed; stop its processes and retry", where.Session)
	}
	return nil
}

// takeNumber numbers the new attempt, under the bead's lock, and archives the previous one's
// records, or sets its unreadable run record aside.
func (o *Opened) takeNumber(ctx context.Context, maxRetries int) error {
	c := o.count()
	if maxRetries > 0 && c.number > maxRetries {
		return &Refusal{Bead: o.Bead, MaxRetries: maxRetries, Last: c.prev, LastResult: c.res}
	}
	o.Number = c.number
	if c.unreadable != nil {
		aside, err := o.setAside(ctx)
		if err != nil {
			return fmt.Errorf("the previous run record of %s cannot be read (%v), and setting it aside failed: %w", o.Bead, c.unreadable, err)
		}
		o.Aside, o.Unreadable = aside, c.unreadable
		return nil
	}
	if c.prev != nil {
		o.Previous = c.prev
		// A refusal is no attempt: it recorded the capped attempt over the real one, which
		// the first refusal archived already.
		if !refused(o.Dir, c.prev) {
			if err := archive(o.Dir, c.prev); err != nil {
				return err
			}
		}
	}
	return nil
}

// counted is what the bead's records say of its last attempt, and the next one's number.
type counted struct {
	prev       *record.Run
	res        *record.Result
	number     int
	unreadable error // the run record is a regular file no reader can read
}

// count reads the bead's records and numbers the next attempt: the previous run's attempt + 1,
// 1 when there is none (a link or a special file planted there is no record). For a run record
// that cannot be read, one past the highest attempt the result and the archive know.
func (o *Opened) count() counted {
	var c counted
	c.res, _ = record.ReadResult(o.Dir.Store.ResultPath(o.Bead))
	path := o.Dir.Store.RunPath(o.Bead)
	prev, err := record.ReadRun(path)
	switch {
	case err == nil:
		c.prev, c.number = prev, prev.Attempt+1
	case errors.Is(err, os.ErrNotExist) || !isRegular(path):
		c.number = 1
	default:
		c.unreadable = err
		last := highestArchived(o.Dir, o.Bead)
		if c.res != nil {
			last = max(last, c.res.Attempt)
		}
		c.number = last + 1
	}
	return c
}

// highestArchived is the highest attempt number in bead's attempts archive, 0 when none.
func highestArchived(d Dir, bead string) int {
	names, _ := fsx.Names(d.State().AttemptDir(bead), func(n string) (string, bool) { return n, true })
	last := 0
	for _, name := range names {
		if _, n, ok := statedir.AttemptFile(name); ok {
			last = max(last, n)
		}
	}
	return last
}

// setAside moves the bead's unreadable run record into the attempts archive (record.SetAside),
// under the run record's lock (validate-state --fix writes it under that lock only), and keeps
// beside it copies of what the new attempt will replace: the result record and the log.
func (o *Opened) setAside(ctx context.Context) (*record.Aside, error) {
	sd := o.Dir.State()
	if err := statedir.MkdirFor(sd.RunLock(o.Bead)); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	unlock, err := fsx.LockFile(lctx, sd.RunLock(o.Bead))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// What the new attempt will replace is copied first, so that a failure leaves the bead as
	// it was (the directory is ours, made just now).
	dir, err := record.NewAsideDir(sd, o.Bead, time.Now())
	if err != nil {
		return nil, err
	}
	fail := func(what string, err error) (*record.Aside, error) {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if b, err := statedir.ReadFile(sd.Result(o.Bead), record.MaxSize); err == nil {
		if err := fsx.WriteFileAtomic(filepath.Join(dir, record.AsideName(record.KindResult)), b, 0o600); err != nil {
			return fail("keeping the result record beside it", err)
		}
	}
	if err := keepLog(sd.Log(o.Bead), filepath.Join(dir, "output.log")); err != nil {
		return fail("keeping the log beside it", err)
	}
	to, err := record.MoveAside(sd.Run(o.Bead), dir, record.KindRun)
	if err != nil {
		return fail("moving it", err)
	}
	return &record.Aside{Dir: dir, Path: to}, nil
}

// isRegular reports whether path is a regular file, not following a link.
func isRegular(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

// kill kills a supervisor that did not stop when asked: its process (the agent dies with it,
// Pdeathsig), and its session.
func kill(ctx context.Context, sessions *tmux.Client, entry *supervise.Entry, session string) {
	if entry != nil && supervise.SupervisorAlive(entry.PID, entry.Name) {
		syscall.Kill(entry.PID, syscall.SIGKILL)
	}
	if sessions != nil && session != "" {
		sessions.KillSession(ctx, session)
	}
}

// makeStateDirs checks the state directory (statedir.Dir.Check) and creates the directories
// dispatch.sh created on every dispatch (runs/, results/, watch/), which the workspace's own
// checks expect (tests/e2e/test-workspace.sh fails without state/watch), though only the
// records are ours.
func makeStateDirs(d Dir) error {
	sd := d.State()
	if err := sd.Check(); err != nil {
		return err
	}
	for _, dir := range []string{sd.Runs(), sd.Results(), sd.Watch()} {
		if err := statedir.Mkdir(dir); err != nil {
			return err
		}
	}
	return nil
}

// refused reports whether run is a refusal's record (Refuse, or dispatch.sh's over
// DISPATCH_MAX_RETRIES): failed, its result's reason max-retries-reached for the same attempt.
func refused(d Dir, run *record.Run) bool {
	if run.Status != record.StatusFailed {
		return false
	}
	res, err := record.ReadResult(d.Store.ResultPath(run.Bead))
	return err == nil && res.Reason == ReasonMaxRetries && res.Attempt == run.Attempt
}

func (o *Opened) alive(ctx context.Context) (bool, *supervise.Entry) {
	return Alive(ctx, o.Dir, o.where, o.Bead)
}

func (o *Opened) waitGone(ctx context.Context, limit time.Duration) bool {
	return WaitGone(ctx, o.Dir, o.where, o.Bead, limit)
}

// Alive reports whether a supervisor of bead is running, by its registry entry or its
// session, and returns its entry.
func Alive(ctx context.Context, d Dir, where Where, bead string) (bool, *supervise.Entry) {
	entry, _ := d.Layout.ReadEntry(bead)
	if entry != nil && supervise.SupervisorAlive(entry.PID, bead) {
		return true, entry
	}
	if where.Tmux != nil && (where.Backend == supervise.BackendTmux || (entry != nil && entry.Backend == supervise.BackendTmux)) {
		if ok, _ := where.Tmux.HasSession(ctx, where.Session); ok {
			return true, entry
		}
	}
	return false, entry
}

// WaitGone waits until bead has no live supervisor, up to limit. A supervisor that runs one
// attempt removes its entry once the end is recorded, a moment before it exits: the process
// last seen in the entry is waited for too, so that nothing of the attempt runs on when
// WaitGone returns (an abort that returns must leave the working tree alone).
func WaitGone(ctx context.Context, d Dir, where Where, bead string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	seen := 0
	for time.Now().Before(deadline) {
		live, entry := Alive(ctx, d, where, bead)
		if entry != nil && entry.PID > 0 {
			seen = entry.PID
		}
		if !live && (seen == 0 || !supervise.SupervisorAlive(seen, bead)) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Stop asks a supervisor to stop its agent and record the end: sig to its process, or, when
// only its session is known, the session killed (which sends the pane SIGHUP).
func Stop(ctx context.Context, sessions *tmux.Client, entry *supervise.Entry, session string, sig syscall.Signal) {
	if entry != nil && supervise.SupervisorAlive(entry.PID, entry.Name) {
		syscall.Kill(entry.PID, sig)
		return
	}
	if sessions != nil && session != "" {
		sessions.KillSession(ctx, session)
	}
}

// archive keeps the previous attempt's records and log in attempts/<bead>/ before a new
// attempt replaces them: run-<N>.json, result-<N>.json, output-<N>.log (the layout
// analyze-runs --attempts reads). Only regular files are kept, read without following a link
// and without blocking (statedir.Open): a link or a named pipe planted at a record or the log is
// nothing of the attempt's. The records are copied (they are small, and bounded); the log,
// whatever its size, is never read into memory (keepLog).
func archive(d Dir, prev *record.Run) error {
	bead, n, sd := prev.Bead, prev.Attempt, d.State()
	if err := statedir.MkdirFor(sd.AttemptRun(bead, n)); err != nil {
		return fmt.Errorf("keeping attempt %d: %w", n, err)
	}
	records := [][2]string{
		{sd.Run(bead), sd.AttemptRun(bead, n)},
		{sd.Result(bead), sd.AttemptResult(bead, n)},
	}
	for _, m := range records {
		b, err := statedir.ReadFile(m[0], record.MaxSize)
		if errors.Is(err, os.ErrNotExist) || (err != nil && !isRegular(m[0])) {
			continue // nothing to keep: no record, or a link or special file planted there
		}
		if err != nil {
			return fmt.Errorf("keeping attempt %d: %w", n, err)
		}
		// Copied, not moved: the current records stay in place until the new ones replace them.
		if err := fsx.WriteFileAtomic(m[1], b, 0o600); err != nil {
			return fmt.Errorf("keeping attempt %d: %w", n, err)
		}
	}
	if err := keepLog(sd.Log(bead), sd.AttemptOutput(bead, n)); err != nil {
		return fmt.Errorf("keeping attempt %d's output: %w", n, err)
	}
	return nil
}

// keepLog keeps the log at src as dst, in constant memory, whatever its size: a hard link to
// the same file where it can be made (no byte is copied; the next attempt's supervisor makes
// logs/<bead>.log a new file and never writes the old one again), else a streaming copy. Either
// goes through one descriptor of src, opened as statedir.Open opens it, so what is kept is the
// regular file that was checked, not whatever a link swapped in meanwhile points to. The result
// is renamed into place. A missing log, or one that is not a regular file, keeps nothing.
func keepLog(src, dst string) error {
	f, err := statedir.Open(src)
	if err != nil {
		return nil
	}
	defer f.Close()
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-"+hex.EncodeToString(rnd[:]))
	// linkat through /proc/self/fd links the file the descriptor holds (AT_EMPTY_PATH would need
	// CAP_DAC_READ_SEARCH); it fails across file systems, or without /proc.
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW); err != nil {
		if err := copyTo(tmp, f); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	if dir, err := os.Open(filepath.Dir(dst)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return nil
}

// copyTo copies r into a new file at path (0600), streaming: io.Copy between files uses
// copy_file_range, else a small buffer.
func copyTo(path string, r io.Reader) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, r)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Launch starts the attempt: it registers the bead's supervisor (launching), writes the
// running records, starts the supervisor with self (the command line that runs this binary's
// supervisor verb: self, supervise.SuperviseVerb, --state-dir, …) and hands it spec. It returns
// the supervisor's pid. A supervisor that cannot be started is recorded as a failed attempt.
func (o *Opened) Launch(ctx context.Context, spec *Spec, self []string) (int, error) {
	entry, err := o.Register(ctx, spec)
	if err != nil {
		return 0, err
	}
	// dispatch.sh wrote a running result at each launch, which dispatch's readers still see.
	res := record.Result{SchemaVersion: record.SchemaVersion, Bead: o.Bead, Agent: spec.Run.Agent,
		Status: record.StatusRunning, Reason: ReasonDispatched, StartedAt: spec.Run.StartedAt, Attempt: spec.Run.Attempt,
		MaxRetries: spec.Run.MaxRetries, SessionName: spec.Run.SessionName}
	if err := o.Dir.Store.WriteResult(ctx, &res); err != nil {
		o.Dir.Layout.RemoveEntry(o.Bead)
		return 0, err
	}
	pid, err := o.start(ctx, spec, self)
	if err != nil {
		o.LaunchFailed(ctx, spec, err)
		return 0, fmt.Errorf("starting the supervisor: %w", err)
	}
	entry.PID = pid
	o.Dir.Layout.WriteEntry(entry)
	return pid, nil
}

// Register registers the launch of spec's attempt (its entry, pid 0) and writes its running
// run record: what Launch does before it starts a supervisor, for a starter that hands the
// attempt to one serving a slot (Server.Hand) once it has let go of the bead's lock. It returns
// the entry written. The result record is written once, final: the previous attempt's (kept
// in the archive by Open) is removed, so that no reader takes it for this attempt's end, and a
// run record without a result reads as running (analyze-runs, dispatch wait and ps).
func (o *Opened) Register(ctx context.Context, spec *Spec) (*supervise.Entry, error) {
	l := o.Dir.Layout
	// Registered before the records say "running" (pid 0: launching), so that reconcile, which
	// looks only at the registry, can never miss a running record.
	entry := &supervise.Entry{Tool: Tool, Name: o.Bead, Attempt: spec.Run.Attempt, Backend: spec.Backend,
		StartedAt: spec.Run.StartedAt, Socket: spec.Socket, Session: spec.Session}
	if err := l.WriteEntry(entry); err != nil {
		return nil, fmt.Errorf("registering the supervisor: %w", err)
	}
	// Removing never follows a link: a link planted there goes, its target stays.
	if err := os.Remove(o.Dir.Store.ResultPath(o.Bead)); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.RemoveEntry(o.Bead)
		return nil, fmt.Errorf("removing the previous attempt's result: %w", err)
	}
	if err := o.Dir.Store.WriteRun(ctx, &spec.Run); err != nil {
		l.RemoveEntry(o.Bead)
		return nil, err
	}
	return entry, nil
}

// LaunchFailed records a registered attempt whose supervisor could not be started as failed
// (launch-failed) and removes its entry. The caller holds the bead's lock.
func (o *Opened) LaunchFailed(ctx context.Context, spec *Spec, err error) {
	out := &supervise.Outcome{Status: record.StatusFailed, Reason: ReasonLaunchFailed, Finished: time.Now(),
		UnknownExit: true, Summary: err.Error()}
	r, res := Complete(spec.Run, out, nil)
	o.Dir.Store.WriteRun(ctx, &r)
	o.Dir.Store.WriteResult(ctx, &res)
	o.Dir.Layout.RemoveEntry(o.Bead)
}

// handoffWait is how long a starting supervisor has to take its spec.
const handoffWait = 15 * time.Second

// start launches the supervisor in the bead's tmux session, or detached, and hands it spec.
func (o *Opened) start(ctx context.Context, spec *Spec, self []string) (int, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return 0, err
	}
	h, err := supervise.OfferHandoff(o.Dir.Layout.HandoffDir(), b)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	argv := append(append([]string{}, self...), "--handoff", h.Path(), o.Bead)
	var reap func()
	if spec.Backend == supervise.BackendTmux {
		if _, err := o.where.Tmux.NewSession(ctx, spec.Session, spec.Attempt.Dir, nil, argv...); err != nil {
			return 0, err
		}
	} else {
		// Its own session: the supervisor must outlive the shell, terminal or CI step that ran
		// dispatch; reaped if it ends while the caller still runs (--wait).
		child, err := proc.StartDetached(argv, proc.Detached{Dir: spec.Attempt.Dir})
		if err != nil {
			return 0, err
		}
		reap = child.Kill
	}
	hctx, cancel := context.WithTimeout(ctx, handoffWait)
	defer cancel()
	pid, err := h.Give(hctx)
	if err != nil {
		if reap != nil {
			reap()
		} else {
			o.where.Tmux.KillSession(ctx, spec.Session)
		}
		return 0, err
	}
	return pid, nil
}
