package screen

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// screenTests are what a person sees after each output, on xterm (and tmux, which these cases
// were checked against in the features they share).
var screenTests = []struct {
	feature    string
	cols, rows int
	in         string
	want       []string
}{
	{"lines", 20, 5, "a\r\nb\r\n", []string{"a", "b"}},
	{"blank screen", 20, 5, "", []string{}},
	{"overwrite with CR (progress bar)", 20, 5, "progress 10%\rprogress 100%", []string{"progress 100%"}},
	{"spinner redrawn with CR and EL", 30, 5, "\r\x1b[2K⠋ Thinking\r\x1b[2K⠙ Done", []string{"⠙ Done"}},
	{"clear screen (ED 2) and home (CUP)", 20, 5, "old\r\nold\x1b[2J\x1b[Hnew", []string{"new"}},
	{"absolute cursor moves (CUP)", 20, 5, "\x1b[3;5Hx\x1b[1;1Hy", []string{"y", "", "    x"}},
	{"Ink redraw: cursor up and erase (CUU, EL)", 20, 5,
		"a\r\nbox1\r\nbox2\x1b[2K\x1b[1A\x1b[2K\x1b[Gbox3", []string{"a", "box3"}},
	{"wrapping at the last column (DECAWM)", 10, 5, "0123456789abc", []string{"0123456789", "abc"}},
	{"scrolling past the bottom", 10, 3, "1\r\n2\r\n3\r\n4\r\n5", []string{"3", "4", "5"}},
	{"LF without CR keeps the column", 10, 5, "ab\ncd", []string{"ab", "  cd"}},
	{"trailing spaces and empty lines dropped", 10, 5, "a   \r\n\r\n\r\n", []string{"a"}},
	{"colours dropped (SGR)", 10, 5, "\x1b[31mred\x1b[0m", []string{"red"}},
	{"wide characters once", 10, 5, "日本語|", []string{"日本語|"}},
	{"emoji with a skin tone: one grapheme", 10, 5, "a👍🏽b", []string{"a👍🏽b"}},
	{"tab to the next stop (HT)", 20, 5, "a\tb", []string{"a       b"}},
	{"backspace then overwrite (BS)", 10, 5, "ab\bc", []string{"ac"}},
	{"erase to end of line (EL 0)", 20, 5, "hello world\x1b[6G\x1b[K", []string{"hello"}},
	{"scroll region (DECSTBM)", 10, 4, "top\r\n\x1b[2;4r\x1b[4;1Ha\r\nb\r\nc\r\nd\x1b[r", []string{"top", "b", "c", "d"}},
	{"window title not shown (OSC 0)", 10, 5, "\x1b]0;title\x07x", []string{"x"}},
	{"DEC line drawing charset (SCS ESC ( 0)", 10, 5, "\x1b(0lqk\x1b(B", []string{"┌─┐"}},
	{"alternate screen hides the shell (CSI ? 1049 h)", 20, 5, "$ agent\r\n\x1b[?1049h\x1b[HTUI", []string{"TUI"}},
	{"leaving the alternate screen shows the shell again", 20, 5,
		"$ agent\r\n\x1b[?1049h\x1b[HTUI\x1b[?1049l", []string{"$ agent"}},
	{"ED 2 in the alternate screen", 20, 5, "\x1b[?1049hone\x1b[2J\x1b[Htwo", []string{"two"}},
}

func TestScreenLines(t *testing.T) {
	for _, tt := range screenTests {
		s := New(tt.cols, tt.rows)
		io.WriteString(s, tt.in)
		if got := s.Lines(0); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Lines after %q = %q, want %q", tt.feature, tt.in, got, tt.want)
		}
		want := ""
		for _, l := range tt.want {
			want += l + "\n"
		}
		if got := s.Text(); got != want {
			t.Errorf("%s: Text after %q = %q, want %q", tt.feature, tt.in, got, want)
		}
		s.Close()
	}
}

// TestScreenChunked: output split anywhere, even inside a sequence or a character, paints the
// same screen, as the relay's reads split it where they like.
func TestScreenChunked(t *testing.T) {
	out := agentOutput(32 << 10)
	whole := New(120, 40)
	defer whole.Close()
	whole.Write(out)
	want := whole.Lines(0)
	bytewise := New(120, 40)
	defer bytewise.Close()
	for i := range out {
		bytewise.Write(out[i : i+1])
		if i%7919 == 0 {
			bytewise.Lines(0) // catch up mid-stream, maybe mid-sequence
		}
	}
	if got := bytewise.Lines(0); !slices.Equal(got, want) {
		t.Errorf("Lines after the output a byte at a time = %q, want %q", got, want)
	}
	if len(want) < 10 {
		t.Errorf("Lines after 32 KiB of output = %q, want a full screen", want)
	}
}

func TestScreenLinesN(t *testing.T) {
	s := New(10, 5)
	defer s.Close()
	io.WriteString(s, "1\r\n2\r\n3\r\n4")
	for _, tt := range []struct {
		n    int
		want []string
	}{
		{0, []string{"1", "2", "3", "4"}},
		{-1, []string{"1", "2", "3", "4"}},
		{2, []string{"3", "4"}},
		{4, []string{"1", "2", "3", "4"}},
		{9, []string{"1", "2", "3", "4"}},
	} {
		if got := s.Lines(tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("Lines(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestScreenResize(t *testing.T) {
	s := New(10, 3)
	defer s.Close()
	if c, r := s.Size(); c != 10 || r != 3 {
		t.Errorf("Size() = %d, %d, want 10, 3", c, r)
	}
	// Written at 10 columns, so wrapped there: the resize applies after it, not before.
	io.WriteString(s, "0123456789abcde")
	s.Resize(20, 4)
	if got, want := s.Lines(0), []string{"0123456789", "abcde"}; !slices.Equal(got, want) {
		t.Errorf("Lines after writing 15 characters at 10 columns then Resize(20, 4) = %q, want %q", got, want)
	}
	if c, r := s.Size(); c != 20 || r != 4 {
		t.Errorf("Size() after Resize(20, 4) = %d, %d, want 20, 4", c, r)
	}
	io.WriteString(s, "\x1b[2J\x1b[Hhello world")
	s.Resize(5, 2)
	io.WriteString(s, "\r\n123456789")
	if got, want := s.Lines(0), []string{"12345", "6789"}; !slices.Equal(got, want) {
		t.Errorf("Lines after Resize(5, 2) and 9 characters = %q, want %q", got, want)
	}
	s.Resize(0, -1)
	if c, r := s.Size(); c != 1 || r != 1 {
		t.Errorf("Size() after Resize(0, -1) = %d, %d, want 1, 1", c, r)
	}
}

// chanWriter hands each write to a channel, for a test to wait on.
type chanWriter chan string

func (w chanWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

func TestScreenReplies(t *testing.T) {
	tests := []struct {
		feature, in, want string
	}{
		{"cursor position report (DSR CSI 6 n)", "ab\r\ncd\x1b[6n", "\x1b[2;3R"},
		// vt v0.1.0 answers with the DEC form, CSI ? 0 n; xterm with CSI 0 n.
		{"operating status (DSR CSI 5 n)", "\x1b[5n", "\x1b[?0n"},
		{"primary device attributes (DA CSI c)", "\x1b[c", "\x1b[?62;1;6;22c"},
		{"mode report (DECRQM CSI ? 25 $ p)", "\x1b[?25$p", "\x1b[?25;1$y"},
		{"question split across writes", "\x1b[", "\x1b[1;1R"},
	}
	for _, tt := range tests {
		s := New(20, 5)
		replies := make(chanWriter, 4)
		s.ReplyTo(replies)
		io.WriteString(s, tt.in)
		if tt.in == "\x1b[" {
			io.WriteString(s, "6n")
		}
		// No read of the screen: the answer must come by itself, as the agent waits for it.
		select {
		case got := <-replies:
			if got != tt.want {
				t.Errorf("%s: reply to %q = %q, want %q", tt.feature, tt.in, got, tt.want)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: no reply to %q after 10s", tt.feature, tt.in)
		}
		s.Close()
	}
}

// TestScreenRepliesUnread: with no ReplyTo the answers go nowhere, and nothing waits on them.
func TestScreenRepliesUnread(t *testing.T) {
	s := New(20, 5)
	defer s.Close()
	for range 100 {
		io.WriteString(s, "x\x1b[6n\x1b[c")
	}
	done := make(chan []string)
	go func() { done <- s.Lines(1) }()
	select {
	case got := <-done:
		if want := strings.Repeat("x", 20); len(got) != 1 || got[0] != want {
			t.Errorf("Lines(1) after 100 unanswered questions = %q, want [%q]", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lines blocked after unanswered questions")
	}
}

// TestScreenDrop: far more output than the buffer between two reads, and the screen still
// shows the last lines exactly, as the kept bytes start at a line.
func TestScreenDrop(t *testing.T) {
	var out bytes.Buffer
	for i := range 100000 {
		fmt.Fprintf(&out, "\x1b[3%dmline %d\x1b[0m\r\n", i%8, i)
	}
	for _, chunk := range []int{4096, out.Len()} {
		s := New(40, 5)
		for b := out.Bytes(); len(b) > 0; b = b[min(chunk, len(b)):] {
			s.Write(b[:min(chunk, len(b))])
		}
		want := []string{"line 99996", "line 99997", "line 99998", "line 99999"}
		if got := s.Lines(0); !slices.Equal(got, want) {
			t.Errorf("Lines after %d bytes in chunks of %d = %q, want %q", out.Len(), chunk, got, want)
		}
		if s.Written() != int64(out.Len()) {
			t.Errorf("Written() = %d, want %d", s.Written(), out.Len())
		}
		// All but the last 128-256 KiB, less up to 4 KiB to start at a line.
		if d := s.Dropped(); d < int64(out.Len()-2*maxPending) || d > int64(out.Len()-maxPending+4096) {
			t.Errorf("Dropped() = %d of %d, want all but the last 124-256 KiB", d, out.Len())
		}
		s.Close()
	}
}

// TestScreenDropMidSequence: output with no line to cut at is cut before an escape sequence,
// never inside one, so no parameters show as text.
func TestScreenDropMidSequence(t *testing.T) {
	s := New(20, 3)
	defer s.Close()
	unit := "\x1b]8;;https://example.com/x\x1b\\\x1b[38;2;1;2;3mX\x1b[0m"
	io.WriteString(s, strings.Repeat(unit, 3*maxPending/len(unit)+17))
	for _, l := range s.Lines(0) {
		if strings.Trim(l, "X") != "" {
			t.Errorf("Lines after a cut without newlines = %q, want only Xs", s.Lines(0))
			break
		}
	}
	if s.Dropped() == 0 {
		t.Error("Dropped() = 0 after 3×128 KiB unread, want > 0")
	}
}

func TestScreenHash(t *testing.T) {
	a, b := New(20, 5), New(20, 5)
	defer a.Close()
	defer b.Close()
	if a.Hash() != b.Hash() {
		t.Error("Hash of two blank screens differ")
	}
	io.WriteString(a, "\x1b[31mhello\x1b[0m")
	io.WriteString(b, "hello")
	if a.Hash() != b.Hash() {
		t.Error("Hash differs for the same text in other colours")
	}
	w := a.Written()
	io.WriteString(a, "\rhello")
	if a.Written() == w {
		t.Error("Written() did not move after a write")
	}
	if a.Hash() != b.Hash() {
		t.Error("Hash changed after redrawing the same text")
	}
	io.WriteString(a, "!")
	if a.Hash() == b.Hash() {
		t.Error("Hash unchanged after the text changed")
	}
}

func TestScreenClose(t *testing.T) {
	before := runtime.NumGoroutine()
	s := New(20, 5)
	io.WriteString(s, "kept")
	s.Close()
	if n, err := io.WriteString(s, "discarded"); n != 9 || err != nil {
		t.Errorf("Write after Close = %d, %v, want 9, nil", n, err)
	}
	if got := s.Lines(0); !slices.Equal(got, []string{}) && !slices.Equal(got, []string{"kept"}) {
		t.Errorf("Lines after Close = %q, want the screen as it was", got)
	}
	s.Close()
	// The goroutine carrying answers ends.
	for i := 0; runtime.NumGoroutine() > before; i++ {
		if i == 100 {
			t.Fatalf("%d goroutines after Close, want %d", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestScreenConcurrent is for -race: the relay writing while watchers read, resize and change
// where answers go.
func TestScreenConcurrent(t *testing.T) {
	s := New(120, 40)
	defer s.Close()
	out := agentOutput(1 << 20)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	want := int64(len(out))
	wg.Go(func() {
		defer close(stop)
		for i := 0; i < len(out); i += 4096 {
			s.Write(out[i:min(i+4096, len(out))])
			if i%(64<<10) == 0 {
				want += int64(len("\x1b[6n"))
				s.Write([]byte("\x1b[6n"))
			}
		}
	})
	for r := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				switch (i + r) % 5 {
				case 0:
					s.Lines(10)
				case 1:
					s.Hash()
				case 2:
					s.Size()
					s.Written()
					s.Dropped()
				case 3:
					s.Resize(80+i%80, 24+i%20)
				case 4:
					s.ReplyTo(io.Discard)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	if s.Written() != want {
		t.Errorf("Written() = %d, want %d", s.Written(), want)
	}
}

// TestHugeCounts: sequences vt carries out one step per count (REP, ECH, CHT, CBT) with the
// largest count its parser keeps take no time, and leave the screen as the full count would.
func TestHugeCounts(t *testing.T) {
	tests := []struct {
		feature, in string
		want        []string
	}{
		// The bottom row is the one the last scroll opened: it holds (2 + n) mod 5 characters.
		{"repeat the last character (REP CSI n b)", "ab\x1b[2147483646b|", []string{"bbbbb", "bbbbb", "bbb|"}},
		{"REP by a multiple of the width, plus one", "x\x1b[1000000001b|", []string{"xxxxx", "xxxxx", "xx|"}},
		{"REP within the screen is left alone", "\x1b[2;1Hx\x1b[3b|", []string{"", "xxxx|"}},
		{"erase characters (ECH CSI n X)", "abcde\x1b[3G\x1b[2147483646X", []string{"ab"}},
		{"tab forward (CHT CSI n I)", "a\x1b[99999999I|", []string{"a   |"}},
		{"tab back (CBT CSI n Z)", "abcd\x1b[99999999Z|", []string{"|bcd"}},
	}
	for _, tt := range tests {
		s := New(5, 3)
		start := time.Now()
		io.WriteString(s, tt.in)
		got := s.Lines(0)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: %q took %v", tt.feature, tt.in, d)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Lines after %q = %q, want %q", tt.feature, tt.in, got, tt.want)
		}
		s.Close()
	}
}

// TestScrollRegionBelowScreen: vt v0.1.0 panics on a scroll after a scroll region set below
// the screen (found by FuzzScreen); the region is cut to the screen, as xterm does.
func TestScrollRegionBelowScreen(t *testing.T) {
	s := New(3, 2)
	defer s.Close()
	io.WriteString(s, "a\r\nb\x1b[;7r\x1b[S\x1b[2;1Hc")
	if got, want := s.Lines(0), []string{"b", "c"}; !slices.Equal(got, want) {
		t.Errorf("Lines after a scroll region to row 7 of 2 and a scroll = %q, want %q", got, want)
	}
	if n := s.resets.Load(); n != 0 {
		t.Errorf("the emulator was replaced %d times, want 0", n)
	}
}

// TestEmulatorPanic: a panic in the emulator costs the screen, not the program.
func TestEmulatorPanic(t *testing.T) {
	s := New(10, 3)
	defer s.Close()
	io.WriteString(s, "before")
	s.Lines(0)
	s.mu.Lock()
	s.emu.RegisterCsiHandler('y', func(ansi.Params) bool { panic("vt bug") })
	s.mu.Unlock()
	io.WriteString(s, "\x1b[y lost")
	if got := s.Lines(0); len(got) != 0 {
		t.Errorf("Lines after a panic = %q, want a blank screen", got)
	}
	io.WriteString(s, "after\x1b[y")
	if got, want := s.Lines(0), []string{"after"}; !slices.Equal(got, want) {
		t.Errorf("Lines after the emulator was replaced = %q, want %q", got, want)
	}
	if n := s.resets.Load(); n != 1 {
		t.Errorf("the emulator was replaced %d times, want 1", n)
	}
	if c, r := s.Size(); c != 10 || r != 3 {
		t.Errorf("Size() after the emulator was replaced = %d, %d, want 10, 3", c, r)
	}
}

// TestNoScrollback: the workaround for vt's unbounded alternate-screen scrollback still
// reaches the field it needs. If vt renames it, this fails before memory does.
func TestNoScrollback(t *testing.T) {
	if !noScrollback(vt.NewEmulator(10, 2)) {
		t.Fatal("noScrollback(vt.NewEmulator) = false: vt's screens moved; see noScrollback")
	}
}

// TestAltScreenMemory: a full-screen TUI clearing and redrawing the alternate screen (ED 2
// pushes every line to vt's scrollback) holds the heap steady. Without noScrollback, the heap
// grows by 120 MB here (10000 lines kept of 100 cells of 112 bytes).
func TestAltScreenMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("measures the heap")
	}
	s := New(100, 10)
	defer s.Close()
	io.WriteString(s, "\x1b[?1049h")
	frame := "\x1b[2J\x1b[H" + strings.Repeat(strings.Repeat("█", 99)+"\r\n", 9) + strings.Repeat("█", 99)
	base := heapInuse()
	for range 75 {
		for range 40 {
			io.WriteString(s, frame)
		}
		s.Lines(1) // 40 frames are 120 KiB: read often enough that nothing is dropped
	}
	if s.Dropped() != 0 {
		t.Fatalf("Dropped() = %d, want 0 for this test to mean anything", s.Dropped())
	}
	if grew := int64(heapInuse()) - int64(base); grew > 8<<20 {
		t.Errorf("heap grew %d MB over 3000 alternate-screen frames, want < 8 MB", grew>>20)
	}
}

// TestScreenMemory: the heap after 256 MB of output is what it was after 1 MB. Reported: the
// heap in use at the end, with the Screen live.
func TestScreenMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("relays 256 MB and measures the heap")
	}
	out := agentOutput(1 << 20)
	base := heapInuse()
	s := New(120, 40)
	defer s.Close()
	feed := func(mb int) {
		for i := range mb {
			for j := 0; j < len(out); j += 4096 {
				s.Write(out[j:min(j+4096, len(out))])
			}
			if i%8 == 0 {
				s.Lines(0)
			}
		}
	}
	feed(1)
	first := heapInuse()
	feed(255)
	s.Lines(0)
	last := heapInuse()
	t.Logf("heap in use: %.1f MB before New, %.1f MB after 1 MB, %.1f MB after 256 MB (dropped %d MB)",
		mb(base), mb(first), mb(last), s.Dropped()>>20)
	if last > first+2<<20 {
		t.Errorf("heap grew from %.1f MB to %.1f MB between 1 MB and 256 MB of output", mb(first), mb(last))
	}
	if last-base > 12<<20 {
		t.Errorf("a Screen holds %.1f MB, want < 12 MB", mb(last-base))
	}
	runtime.KeepAlive(out)
}

func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func mb(n uint64) float64 { return float64(n) / (1 << 20) }

func TestQueryScanner(t *testing.T) {
	tests := []struct {
		feature string
		chunks  []string
		want    bool
	}{
		{"cursor position request (DSR CSI 6 n)", []string{"ab\x1b[6n"}, true},
		{"split inside the CSI", []string{"ab\x1b", "[", "6", "n"}, true},
		{"extended cursor position (CSI ? 6 n)", []string{"\x1b[?6n"}, true},
		{"primary device attributes (CSI c)", []string{"\x1b[c"}, true},
		{"secondary device attributes (CSI > c)", []string{"\x1b[>c"}, true},
		{"mode request (DECRQM CSI ? 2026 $ p)", []string{"\x1b[?2026$p"}, true},
		{"background colour query (OSC 11 ; ? BEL)", []string{"\x1b]11;?\x07"}, true},
		{"foreground colour query ended by ST, split", []string{"\x1b]1", "0;?\x1b", "\\"}, true},
		{"colours are no question (SGR)", []string{"\x1b[31mred\x1b[0m"}, false},
		{"soft reset is no question (DECSTR CSI ! p)", []string{"\x1b[!p"}, false},
		{"reset is no question (RIS ESC c)", []string{"\x1bc"}, false},
		{"text with n and c", []string{"run cc -c main.c -n"}, false},
		{"hyperlink with ? (OSC 8)", []string{"\x1b]8;;https://x/?q=1\x1b\\link\x1b]8;;\x1b\\"}, false},
		{"title with ? (OSC 0)", []string{"\x1b]0;done?\x07"}, false},
		{"CAN cancels the CSI", []string{"\x1b[6\x18n"}, false},
		{"APC payload hides nothing", []string{"\x1b_Gcn\x1b\\"}, false},
		{"a question after a DCS", []string{"\x1bPq#0\x1b\\\x1b[6n"}, true},
	}
	for _, tt := range tests {
		var q queryScanner
		got := false
		for _, c := range tt.chunks {
			got = q.scan([]byte(c)) || got
		}
		if got != tt.want {
			t.Errorf("%s: scan(%q) = %v, want %v", tt.feature, tt.chunks, got, tt.want)
		}
	}
}

// BenchmarkScreenWrite is the relay's cost: Write with no reader, 4 KiB chunks as a pty read
// gives them.
func BenchmarkScreenWrite(b *testing.B) {
	out := agentOutput(1 << 20)
	s := New(120, 40)
	defer s.Close()
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < len(out); i += 4096 {
			s.Write(out[i:min(i+4096, len(out))])
		}
	}
}

// BenchmarkScreenEmulate is the emulator's throughput: every byte emulated, read every 64 KiB
// so that nothing is dropped.
func BenchmarkScreenEmulate(b *testing.B) {
	out := agentOutput(1 << 20)
	s := New(120, 40)
	defer s.Close()
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < len(out); i += 4096 {
			s.Write(out[i:min(i+4096, len(out))])
			if i%(64<<10) == 0 {
				s.Lines(1)
			}
		}
		s.Lines(1)
	}
	if s.Dropped() != 0 {
		b.Fatalf("Dropped() = %d, want 0", s.Dropped())
	}
}

// BenchmarkScreenRead is a watcher's cost: read the screen after 1 MB of output, of which the
// emulator catches up on the last 128-256 KiB.
func BenchmarkScreenRead(b *testing.B) {
	out := agentOutput(1 << 20)
	s := New(120, 40)
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for i := 0; i < len(out); i += 4096 {
			s.Write(out[i:min(i+4096, len(out))])
		}
		b.StartTimer()
		s.Lines(0)
	}
}

// FuzzScreen: whatever an agent prints, the emulator does not panic (a panic there would take
// the supervisor down with it) and the screen reads as text with no control in it.
func FuzzScreen(f *testing.F) {
	for _, tt := range screenTests {
		f.Add(tt.in, uint8(tt.cols), uint8(tt.rows))
	}
	for _, tt := range stripTests {
		f.Add(tt.in, uint8(20), uint8(5))
	}
	f.Add("\x1b[99999999;99999999H\x1b[99999999@\x1b[99999999L\x1b[?1049h\x1b[1;99999r\x1b[99999S", uint8(3), uint8(2))
	f.Fuzz(func(t *testing.T, in string, cols, rows uint8) {
		s := New(int(cols%200), int(rows%60))
		defer s.Close()
		half := len(in) / 2
		io.WriteString(s, in[:half])
		s.Lines(0)
		s.Resize(int(rows%200), int(cols%60))
		io.WriteString(s, in[half:])
		for _, l := range s.Lines(0) {
			for _, r := range l {
				if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
					t.Fatalf("Lines after %q has control %U in %q", in, r, l)
				}
			}
		}
	})
}
