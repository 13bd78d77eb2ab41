package supervise

import (
	"io"
	"sync"
	"time"
)

// paneWait is how long the end of the agent's output waits for the console (a tmux pane)
// once the agent has ended: past it the pane is let go, and the copy reaches the end of the
// output for the log and the screen alone.
const paneWait = time.Second

// mirror shows the agent's output on the console (the supervisor's pane) at the console's pace,
// as a terminal would: the copy of the output waits for the pane (an agent that prints fast goes
// at the pane's pace, the relay's memory stays flat), one chunk at a time. It comes after the
// log in the copy, so that what was read is in the log before the pane is waited for; and once
// the agent has ended, drain lets it go: a pane the tmux server is slow to read (a loaded
// machine) must not hold the end of the output, and so the record, back. Before this, the pane
// was written first and drain cut the copy at its bound: the agent's last words (a usage-limit
// message, the summary) were missing from the log under load.
type mirror struct {
	w      io.Writer
	chunks chan []byte
	gone   chan struct{} // closed by letGo: writes are dropped
	stop   chan struct{} // closed by finish: the writer ends after its chunk
	idle   chan struct{} // closed when the writer has ended
	once   sync.Once
	ended  sync.Once
}

// newMirror mirrors to w; io.Discard (a detached supervisor) costs nothing.
func newMirror(w io.Writer) *mirror {
	m := &mirror{w: w, chunks: make(chan []byte), gone: make(chan struct{}), stop: make(chan struct{}), idle: make(chan struct{})}
	if w == nil || w == io.Discard {
		m.letGo()
		close(m.idle)
		return m
	}
	go m.write()
	return m
}

func (m *mirror) write() {
	defer close(m.idle)
	broken := false // a dead pane: the other copies go on
	for {
		select {
		case b := <-m.chunks:
			if !broken {
				if _, err := m.w.Write(b); err != nil {
					broken = true
				}
			}
		case <-m.stop:
			return
		}
	}
}

// Write hands p to the writer, waiting while it writes the chunk before; once let go, it
// drops p. It never fails: the pane is a view.
func (m *mirror) Write(p []byte) (int, error) {
	select {
	case <-m.gone:
		return len(p), nil
	default:
	}
	b := append([]byte(nil), p...) // the copy reuses its buffer
	select {
	case m.chunks <- b:
	case <-m.gone:
	}
	return len(p), nil
}

// letGo stops waiting for the console: what comes after is not shown.
func (m *mirror) letGo() { m.once.Do(func() { close(m.gone) }) }

// finish ends the mirror once the output is copied: the chunk being written is given up to
// wait to reach the pane (the lines the supervisor prints next come after it). Once: a second
// call (the deferred one of a run that finished it already) returns at once.
func (m *mirror) finish(wait time.Duration) {
	m.letGo()
	m.ended.Do(func() {
		close(m.stop)
		select {
		case <-m.idle:
		case <-time.After(wait):
		}
	})
}
