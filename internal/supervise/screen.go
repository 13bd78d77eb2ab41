package supervise

import (
	"bytes"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/screen"
)

// screenSink is the agent's screen as a terminal would show it, fed with its output. It tells
// a watcher when the output moved on, at most every changeEvery, so a chatty agent costs the
// watcher a look per tick, not per write.
type screenSink struct {
	scr     *screen.Screen
	changed chan struct{}

	mu   sync.Mutex
	last time.Time
	crlf []byte // the chunk with its newlines as a terminal shows them, reused
}

const changeEvery = 100 * time.Millisecond

func newScreenSink(cols, rows int) *screenSink {
	return &screenSink{scr: screen.New(cols, rows), changed: make(chan struct{}, 1)}
}

// Write feeds the model a chunk of output. The agent's terminal does not translate newlines
// (see rawOutput), so the model gets each LF as CR LF, as a terminal with ONLCR shows it.
func (s *screenSink) Write(p []byte) (int, error) {
	n, now := len(p), time.Now()
	s.mu.Lock()
	if bytes.IndexByte(p, '\n') < 0 {
		s.scr.Write(p)
	} else {
		s.crlf = s.crlf[:0]
		for {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				break
			}
			s.crlf = append(append(s.crlf, p[:i]...), '\r', '\n')
			p = p[i+1:]
		}
		s.crlf = append(s.crlf, p...)
		s.scr.Write(s.crlf)
	}
	notify := now.Sub(s.last) >= changeEvery
	if notify {
		s.last = now
	}
	s.mu.Unlock()
	if notify {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	return n, nil
}

// Lines returns the last n lines of the screen.
func (s *screenSink) Lines(n int) []string { return s.scr.Lines(n) }

// Hash identifies what the screen shows, to tell a change a person would see from output
// that redraws the same thing.
func (s *screenSink) Hash() uint64 { return s.scr.Hash() }

// Close stops the emulator's helpers; the screen can still be read.
func (s *screenSink) Close() { s.scr.Close() }

// Resize follows the terminal's new size.
func (s *screenSink) Resize(cols, rows int) { s.scr.Resize(cols, rows) }
