package runevents

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Buffer is how many events may wait for a slow consumer; beyond, they are dropped (and
// counted), the run never held.
const Buffer = 1024

// DefaultDrain bounds how long Close waits for the consumer to take the events still waiting:
// a consumer that hangs does not hold the run's end longer.
const DefaultDrain = 5 * time.Second

// Options are a Log's consumer and where it says what went wrong.
type Options struct {
	// Consumer, when set, is told each event, in order, from a goroutine of its own.
	Consumer func(Event)
	// Logf gets the Log's warnings (the file not kept, events dropped); nil: none.
	Logf func(format string, args ...any)
	// Drain bounds Close's wait for the consumer (0: DefaultDrain).
	Drain time.Duration
}

// Log sends a run's events to its events file and to its consumer. The file is written at
// once (a line appended, as the joblog is); the consumer is called in order from one goroutine
// of its own, fed through a buffer of Buffer, so that a slow consumer never holds the
// scheduler: what does not fit is dropped and counted. Its methods are called one at a time
// (the scheduler holds its lock); a nil Log does nothing.
type Log struct {
	execution string
	opts      Options
	started   time.Time // when the run began (Open): its wall time at RunEnd
	// file is the events file, appended to, held locked while the run runs (readers tell a
	// run at work from one gone by it, locked or not); nil when it could not be opened.
	file    *os.File
	seq     int
	ch      chan Event
	done    chan struct{}
	dropped atomic.Int64
	// abandoned: the run ended and the consumer did not take its events in time; it is
	// called no more.
	abandoned atomic.Bool
}

// Open opens the events of execution id's run in the repository whose top is root: its
// events file below the top, never through a link, locked. A failure leaves the run without
// it (said to Logf): the events are the run's news, not its record.
func Open(root, id string, o Options) *Log {
	if o.Drain == 0 {
		o.Drain = DefaultDrain
	}
	l := &Log{execution: id, opts: o, started: time.Now()}
	f, err := openFile(root, id)
	if err != nil {
		l.logf("not keeping the run's events (swarm run follow and wait will not see them): %v", err)
	}
	l.file = f
	if o.Consumer != nil {
		l.ch, l.done = make(chan Event, Buffer), make(chan struct{})
		go l.feed()
	}
	return l
}

// feed hands the events to the consumer, in order, until Close.
func (l *Log) feed() {
	defer close(l.done)
	for e := range l.ch {
		if l.abandoned.Load() {
			l.dropped.Add(1)
			continue
		}
		l.opts.Consumer(e)
	}
}

func (l *Log) logf(format string, args ...any) {
	if l.opts.Logf != nil {
		l.opts.Logf(format, args...)
	}
}

// openFile opens .swarm/history/<id>.events.jsonl for appending: every directory from the
// repository's top a real one (fsx.OpenDirBeneath), the file itself no link (O_NOFOLLOW) and a
// regular file (a FIFO planted there would hold the open: O_NONBLOCK), locked exclusively.
func openFile(root, id string) (*os.File, error) {
	if err := statedir.CheckName(statedir.KindBead, id); err != nil {
		return nil, fmt.Errorf("%q is no execution id: %v", id, err)
	}
	dir, err := fsx.OpenDirBeneath(root, historyDir, true)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	path := Path(root, id)
	fd, err := syscall.Openat(int(dir.Fd()), id+".events.jsonl", syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	// Readers take the lock shared for an instant, to ask whether the run is at work: wait
	// out such an instant, not longer.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %v", path, err)
		}
	}
}

// Emit records e: numbered, timed, appended to the events file, and handed to the consumer
// unless its buffer is full. The methods below are the run's events by name; Emit is for what
// they do not name.
func (l *Log) Emit(e Event) {
	if l == nil {
		return
	}
	l.seq++
	e.Seq, e.Execution = l.seq, l.execution
	if e.Time == "" {
		e.Time = record.FormatTime(time.Now())
	}
	if l.file != nil {
		b, err := json.Marshal(e)
		if err == nil {
			_, err = l.file.Write(append(b, '\n'))
		}
		if err != nil {
			l.logf("writing the run's events: %v; no more are kept", err)
			l.file.Close()
			l.file = nil
		}
	}
	if l.ch == nil {
		return
	}
	select {
	case l.ch <- e:
	default:
		l.dropped.Add(1)
	}
}

// Close ends the run's events (the scheduler's lock not held: the consumer may be waited
// for): the consumer is given Options.Drain to take those waiting, the drops are said, and the
// events file is closed (its lock let go: the run is over for its readers).
func (l *Log) Close() {
	if l == nil {
		return
	}
	if l.ch != nil {
		close(l.ch)
		select {
		case <-l.done:
		case <-time.After(l.opts.Drain):
			l.abandoned.Store(true)
			l.logf("the run's events consumer did not take its last events within %s; not waited for", l.opts.Drain)
		}
		if n := l.dropped.Load(); n > 0 {
			l.logf("%d events were dropped: their consumer was slower than they came (%d wait at most)", n, Buffer)
		}
	}
	if l.file != nil {
		l.file.Close()
	}
}

// Append appends e to execution id's events file, as a run's own are written (never through
// a link): for what happens to an execution outside its runs, a merge (Merge, by swarm run
// merge). Its seq is 0, a run's own numbering untouched; its time is now when unset.
func Append(root, id string, e Event) error {
	f, err := openFile(root, id)
	if err != nil {
		return err
	}
	e.Seq, e.Execution = 0, id
	if e.Time == "" {
		e.Time = record.FormatTime(time.Now())
	}
	b, err := json.Marshal(e)
	if err == nil {
		_, err = f.Write(append(b, '\n'))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
