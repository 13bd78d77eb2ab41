package supervise

import (
	"bytes"
	"io"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/screen"
)

// screenSink is the agent's screen as a terminal would show it, fed with its output. It tells
// a watcher when the output moved on, at most every changeEvery, so a chatty agent costs the
// watcher a look per tick, not per write. The emulator is made at the first output or the
// first look (model): an agent that prints nothing, no one looking, costs none (its buffers
// were a tenth of a do-nothing attempt's supervisor).
type screenSink struct {
	changed chan struct{}

	mu         sync.Mutex
	scr        *screen.Screen // nil until model
	cols, rows int
	reply      io.Writer // where the emulator answers the agent's questions (ReplyTo), if set
	last       time.Time
	crlf       []byte // the chunk with its newlines as a terminal shows them, reused
}

const changeEvery = 100 * time.Millisecond

func newScreenSink(cols, rows int) *screenSink {
	return &screenSink{cols: cols, rows: rows, changed: make(chan struct{}, 1)}
}

// model is the emulator, made blank at the sink's size if it is not yet. s.mu must be held.
func (s *screenSink) model() *screen.Screen {
	if s.scr == nil {
		s.scr = screen.New(s.cols, s.rows)
		if s.reply != nil {
			s.scr.ReplyTo(s.reply)
		}
	}
	return s.scr
}

// screen is the emulator, made if it is not yet, for a reader.
func (s *screenSink) screen() *screen.Screen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model()
}

// ReplyTo has the emulator answer the agent's questions (the cursor position, the terminal's
// attributes) on w.
func (s *screenSink) ReplyTo(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = w
	if s.scr != nil {
		s.scr.ReplyTo(w)
	}
}

// Write feeds the model a chunk of output. The agent's terminal does not translate newlines
// (see rawOutput), so the model gets each LF as CR LF, as a terminal with ONLCR shows it.
func (s *screenSink) Write(p []byte) (int, error) {
	n, now := len(p), time.Now()
	s.mu.Lock()
	scr := s.model()
	if bytes.IndexByte(p, '\n') < 0 {
		scr.Write(p)
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
		scr.Write(s.crlf)
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
func (s *screenSink) Lines(n int) []string { return s.screen().Lines(n) }

// Hash identifies what the screen shows, to tell a change a person would see from output
// that redraws the same thing.
func (s *screenSink) Hash() uint64 { return s.screen().Hash() }

// Written is how many bytes of output the screen has been fed.
func (s *screenSink) Written() int64 { return s.screen().Written() }

// CursorRow is the screen's row at the cursor (screen.Screen.CursorRow).
func (s *screenSink) CursorRow() (row string, atEnd, last bool) { return s.screen().CursorRow() }

// Close stops the emulator's helpers; the screen can still be read.
func (s *screenSink) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scr != nil {
		s.scr.Close()
	}
}

// Resize follows the terminal's new size.
func (s *screenSink) Resize(cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cols, s.rows = cols, rows
	if s.scr != nil {
		s.scr.Resize(cols, rows)
	}
}
