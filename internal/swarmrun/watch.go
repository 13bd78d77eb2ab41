package swarmrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
)

// maxEventLine bounds a line of the events file read back: a longer one (no run writes one) is
// skipped whole.
const maxEventLine = 64 << 10

// watchEvery is how often Watch looks at the events file and its lock.
const watchEvery = 100 * time.Millisecond

// EventReader reads an execution's events file as it grows, never through a link and in
// bounded memory: each Read returns the events of the complete lines appended since the last.
type EventReader struct {
	f    *os.File
	buf  []byte // the start of a line not complete yet
	skip bool   // the line under way is over maxEventLine: dropped up to its end
	// Bad counts the lines that were not events (skipped).
	Bad int
	// More: the last Read stopped at its bound, before the file's end.
	More bool
}

// OpenEvents opens the events file of execution id (fs.ErrNotExist when the execution has
// none: it is not one of this repository's, or it ran before runs kept their events).
func OpenEvents(p Paths, id string) (*EventReader, error) {
	if err := statedir.CheckName(statedir.KindBead, id); err != nil {
		return nil, fmt.Errorf("%w: %q is no execution id", ErrNotFound, id)
	}
	if err := p.makeDirCheck(); err != nil {
		return nil, err
	}
	f, err := fsx.OpenRegular(p.Events(id))
	if err != nil {
		return nil, err
	}
	return &EventReader{f: f}, nil
}

// makeDirCheck refuses a .swarm or .swarm/history that is a link (the events file would be
// read from wherever it points).
func (p Paths) makeDirCheck() error {
	d, err := fsx.OpenDirBeneath(p.Root, ".swarm/history", false)
	if err != nil {
		return err
	}
	return d.Close()
}

// Close closes the file.
func (r *EventReader) Close() error { return r.f.Close() }

// readBatch bounds what one Read reads: a file grown huge is read in bounded memory, a batch
// at a time.
const readBatch = 1 << 20

// Read returns the events of the complete lines appended since the last Read, reading
// readBatch bytes at most: More says whether it stopped short of the file's end.
func (r *EventReader) Read() ([]Event, error) {
	var out []Event
	chunk := make([]byte, 32<<10)
	r.More = false
	for read := 0; ; {
		if read >= readBatch {
			r.More = true
			return out, nil
		}
		n, err := r.f.Read(chunk)
		read += n
		data := chunk[:n]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				if !r.skip {
					r.buf = append(r.buf, data...)
					if len(r.buf) > maxEventLine {
						r.buf, r.skip = r.buf[:0], true
						r.Bad++
					}
				}
				break
			}
			if !r.skip {
				line := append(r.buf, data[:i]...)
				if e, ok := parseEvent(line); ok {
					out = append(out, e)
				} else {
					r.Bad++
				}
			}
			r.buf, r.skip = r.buf[:0], false
			data = data[i+1:]
		}
		if errors.Is(err, io.EOF) || n == 0 {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// parseEvent reads one line of an events file: an object with an event name and a time.
func parseEvent(line []byte) (Event, bool) {
	var e Event
	if len(line) > maxEventLine || json.Unmarshal(line, &e) != nil || e.Event == "" || e.Time == "" {
		return Event{}, false
	}
	return e, true
}

// Running says whether a run of the execution is at work: its events file is locked (the run
// holds the lock from its start to its end; a run killed lets go of it with its process).
func (r *EventReader) Running() bool {
	fd := int(r.f.Fd())
	for {
		err := syscall.Flock(fd, syscall.LOCK_SH|syscall.LOCK_NB)
		switch {
		case err == nil:
			syscall.Flock(fd, syscall.LOCK_UN)
			return false
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
}

// Watch calls fn with each event of execution id, those of its runs so far first, then each
// as it is appended while a run of it is at work, and returns when none is: the execution's
// state then (Find). An execution without an events file (run before they were kept) is only
// looked up. A run started after Watch found none at work is not waited for.
func Watch(ctx context.Context, p Paths, id string, fn func(Event)) (*State, error) {
	if id == "" {
		cur, err := Find(p, "")
		if err != nil {
			return nil, err
		}
		id = cur.ExecutionID
	}
	r, err := OpenEvents(p, id)
	if errors.Is(err, fs.ErrNotExist) {
		return Find(p, id)
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	for {
		running := r.Running()
		for more := true; more; more = r.More {
			evs, err := r.Read()
			for _, e := range evs {
				fn(e)
			}
			if err != nil {
				return nil, err
			}
		}
		if !running {
			// Read after the lock was seen free: every event of the run that held it is in.
			return Find(p, id)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(watchEvery):
		}
	}
}
