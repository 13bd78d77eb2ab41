package supervise

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// ansi matches terminal escape sequences: CSI (colours, cursor moves), OSC (titles, links,
// ended by BEL or ST) and the two-byte escapes.
var ansi = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// StripANSI removes escape sequences and carriage returns, leaving the text a person would read.
func StripANSI(s string) string {
	s = ansi.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, "\r", "")
}

// Summary is the run record's output_summary: the last n characters of the output, escape
// sequences stripped, surrounding whitespace trimmed.
func Summary(output []byte, n int) string {
	s := strings.TrimSpace(StripANSI(strings.ToValidUTF8(string(output), "")))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[len(r)-n:])
}

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
