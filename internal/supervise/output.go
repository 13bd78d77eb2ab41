package supervise

import (
	"sync"

	"github.com/agentfleet/fleet/internal/screen"
)

// summaryChars is the length of an outcome's summary: output_summary's 500 characters.
const summaryChars = 500

// summarize is an outcome's summary of the end of the output: its last 500 characters, every
// terminal control sequence removed (screen.Summary).
func summarize(output []byte) string { return screen.Summary(output, summaryChars) }

// tail keeps the last max bytes written to it: enough of the output for the summary, however
// long the agent talks.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}
