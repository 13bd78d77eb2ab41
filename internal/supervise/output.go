package supervise

import (
	"bufio"
	"os"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/screen"
)

// summaryChars is the length of an outcome's summary: output_summary's 500 characters.
const summaryChars = 500

// summarize is an outcome's summary of the end of the output: its last 500 characters, every
// terminal control sequence removed (screen.Summary).
func summarize(output []byte) string { return screen.Summary(output, summaryChars) }

// tail keeps the last max bytes written to it: enough of the output for the summary, however
// long the agent talks. It compacts only when it holds twice max, so each byte is copied once
// at most, not once per write.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	if len(t.buf)+len(p) > 2*t.max {
		keep := t.max - len(p)
		t.buf = t.buf[:copy(t.buf, t.buf[len(t.buf)-keep:])]
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// Bytes returns the last max bytes written.
func (t *tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return append([]byte(nil), b...)
}

// logWriter is the attempt's log: writes are gathered into 64 KiB pieces (a pty delivers 4
// KiB at a time, and a file system zeroes the rest of each block it starts), written out when
// the buffer is full, at most flushAfter (20 ms: a person tailing the log sees no lag) after
// the first byte of a piece, and at Flush. An idle log has no timer running.
type logWriter struct {
	mu    sync.Mutex
	w     *bufio.Writer
	armed bool
	err   error
}

const (
	logBuffer  = 64 << 10
	flushAfter = 20 * time.Millisecond
)

func newLogWriter(f *os.File) *logWriter {
	if f == nil {
		return nil
	}
	return &logWriter{w: bufio.NewWriterSize(f, logBuffer)}
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	if _, l.err = l.w.Write(p); l.err != nil {
		return 0, l.err
	}
	if !l.armed && l.w.Buffered() > 0 {
		l.armed = true
		time.AfterFunc(flushAfter, func() { l.Flush() })
	}
	return len(p), nil
}

// Flush writes out what is buffered.
func (l *logWriter) Flush() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = false
	if l.err == nil {
		l.err = l.w.Flush()
	}
	return l.err
}
