package runevents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
)

// maxLine bounds a line of the events file read back: a longer one (no run writes one) is
// skipped whole.
const maxLine = 64 << 10

// readBatch bounds what one Read reads: a file grown huge is read in bounded memory, a batch
// at a time.
const readBatch = 1 << 20

// followEvery is how often Follow looks at the events file and its lock.
const followEvery = 100 * time.Millisecond

// ErrBadID: the name given is no execution id (it could not name an events file).
var ErrBadID = errors.New("no execution id")

// Reader reads an execution's events file as it grows, never through a link and in bounded
// memory: each Read returns the events of the complete lines appended since the last.
type Reader struct {
	f    *os.File
	buf  []byte // the start of a line not complete yet
	skip bool   // the line under way is over maxLine: dropped up to its end
	// Bad counts the lines that were not events (skipped).
	Bad int
	// More: the last Read stopped at its bound, before the file's end.
	More bool
}

// OpenReader opens the events file of execution id in the repository whose top is root
// (fs.ErrNotExist when the execution has none: it is not one of this repository's, or it ran
// before runs kept their events; ErrBadID when id could be no execution's).
func OpenReader(root, id string) (*Reader, error) {
	if err := statedir.CheckName(statedir.KindBead, id); err != nil {
		return nil, fmt.Errorf("%w: %q", ErrBadID, id)
	}
	// A .swarm or .swarm/history that is a link is refused: the events file would be read
	// from wherever it points.
	d, err := fsx.OpenDirBeneath(root, historyDir, false)
	if err != nil {
		return nil, err
	}
	d.Close()
	f, err := fsx.OpenRegular(Path(root, id))
	if err != nil {
		return nil, err
	}
	return &Reader{f: f}, nil
}

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// Read returns the events of the complete lines appended since the last Read, reading
// readBatch bytes at most: More says whether it stopped short of the file's end.
func (r *Reader) Read() ([]Event, error) {
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
					if len(r.buf) > maxLine {
						r.buf, r.skip = r.buf[:0], true
						r.Bad++
					}
				}
				break
			}
			if !r.skip {
				line := append(r.buf, data[:i]...)
				if e, ok := parse(line); ok {
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

// parse reads one line of an events file: an object with an event name and a time.
func parse(line []byte) (Event, bool) {
	var e Event
	if len(line) > maxLine || json.Unmarshal(line, &e) != nil || e.Event == "" || e.Time == "" {
		return Event{}, false
	}
	return e, true
}

// Running says whether a run of the execution is at work: its events file is locked (the run
// holds the lock from its start to its end; a run killed lets go of it with its process).
func (r *Reader) Running() bool {
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

// Follow calls fn with each event of execution id, those of its runs so far first, then each
// as it is appended while a run of it is at work, and returns when none is (OpenReader's
// errors when the file cannot be read). A run started after Follow found none at work is not
// waited for.
func Follow(ctx context.Context, root, id string, fn func(Event)) error {
	r, err := OpenReader(root, id)
	if err != nil {
		return err
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
				return err
			}
		}
		if !running {
			// Read after the lock was seen free: every event of the run that held it is in.
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(followEvery):
		}
	}
}
