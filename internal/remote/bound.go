package remote

import (
	"errors"
	"io"
	"sync"
)

// ErrOutputTooLarge is the error of a host's command that printed more than the bound on what
// is read of it (Options.MaxOutput): the command was killed, and what it printed up to the
// bound is all that was kept.
var ErrOutputTooLarge = errors.New("the host's output passed the bound on what is read of it")

// boundedWriter passes at most left bytes on to w and, on the first byte past them, calls
// passed (which kills the command) and fails the write: a host printing without end costs a
// bounded buffer, not this machine's memory. exec copies each stream in a goroutine of its
// own, and passed may be shared by two of them: mu guards the count.
type boundedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	left   int64
	over   bool
	passed func()
}

func newBoundedWriter(w io.Writer, bound int64, passed func()) *boundedWriter {
	return &boundedWriter{w: w, left: bound, passed: passed}
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return 0, ErrOutputTooLarge
	}
	if int64(len(p)) <= b.left {
		b.left -= int64(len(p))
		return b.w.Write(p)
	}
	n, _ := b.w.Write(p[:b.left])
	b.left, b.over = 0, true
	b.passed()
	return n, ErrOutputTooLarge
}

// passedBound says whether more was printed than the bound.
func (b *boundedWriter) passedBound() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}
