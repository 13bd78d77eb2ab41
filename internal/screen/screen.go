package screen

import (
	"bytes"
	"hash/fnv"
	"io"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// maxPending is how much output Screen keeps for its emulator to catch up on. The emulator
// (charmbracelet/x/vt) runs at about 5 MB/s, a hundredth of what a relay moves, so Write only
// copies here and the emulator works when the screen is read. 128 KiB holds several full
// redraws of a 120×40 screen in colour, so the screen read after dropping older bytes is the
// one those redraws paint, and catching up costs at most 2×maxPending of emulation (about
// 50 ms) whatever the agent printed since the last read.
const maxPending = 128 << 10

// gapMark is fed to the emulator where Screen dropped output: CAN ends any sequence the
// emulator was in the middle of (xterm, VT100), so the kept bytes are not read as its
// parameters, and CR puts the kept bytes, which start at a line, at the start of one.
const gapMark = "\x18\r"

// Screen is a terminal emulator's view of an agent's pty output: what a person looking at the
// agent's terminal would see, for when no tmux pane exists to capture. The relay gives it every
// chunk of output with Write; watchers read it with Lines, Text and Hash. All methods are safe
// for concurrent use.
//
// Write never waits for the emulator: it copies the output into a buffer of at most
// 2×128 KiB, and the emulator catches up when the screen is read, or, if the output asked
// the terminal a question (see ReplyTo), on a goroutine of its own straight away. When more
// than that arrives between two reads, the oldest bytes are dropped and the emulator goes on
// from the newest 128 KiB, cut at a line (or before an escape sequence): the screen is then
// the one those bytes paint over what was there, exact for output that scrolls and for
// full-screen redraws, approximate for a TUI that repaints only what changed until its next
// full redraw. Dropped counts them.
//
// Should the emulator panic on some output (vt v0.1.0 did on a case fuzzing found, now kept
// from it), the screen starts over blank from the next write rather than take the supervisor
// down.
//
// Memory stays under about 6 MB whatever the volume: the visible screen of each buffer (main
// and alternate) and no scrollback, the pending buffer, and 4 MB the emulator's parser keeps
// for OSC and DCS payloads (allocated once, left mostly untouched).
type Screen struct {
	in      sync.Mutex // guards pending, spare, gap, queries and closed; Write holds it to copy
	pending []byte     // output the emulator has not seen
	spare   []byte     // the buffer the emulator last caught up from, reused
	gap     bool       // output was dropped before pending
	queries queryScanner
	closed  bool

	written   atomic.Int64
	dropped   atomic.Int64
	resets    atomic.Int64  // emulators replaced after a panic
	size      atomic.Uint64 // cols<<32 | rows
	answering atomic.Bool   // a goroutine is on its way to catch up and answer a query

	mu   sync.Mutex // guards emu; held while catching up, so readers queue behind one another
	emu  *vt.Emulator
	sink *replySink
	shut *shutter
}

// New returns the screen of a cols×rows terminal, blank, as a pty of that size starts. Sizes
// below 1 are taken as 1. Call Close when done with it.
func New(cols, rows int) *Screen {
	cols, rows = max(cols, 1), max(rows, 1)
	s := &Screen{sink: &replySink{}}
	s.size.Store(uint64(cols)<<32 | uint64(rows))
	s.start(cols, rows)
	return s
}

// start gives s a new emulator of cols×rows, blank. s.mu must be held, or s be new.
func (s *Screen) start(cols, rows int) {
	e := vt.NewEmulator(cols, rows)
	noScrollback(e)
	clampCounts(e)
	s.emu, s.shut = e, &shutter{emu: e}
	// The emulator writes its answers into an io.Pipe and blocks until they are read: without
	// this reader the first cursor position request would hang the emulator, and every reader
	// of the screen behind it.
	go drain(e, s.sink)
	// A Screen dropped without Close would leave that reader blocked for ever.
	runtime.AddCleanup(s, (*shutter).close, s.shut)
}

// guard runs f on the emulator and, if the emulator panics, gives s a blank one in its place.
// vt v0.1.0 has panicked on output fuzzing found (a scroll region below the screen, then a
// scroll); what an agent prints must not take its supervisor down. The output from the panic
// to the end of f's chunk is lost and the screen starts over blank. s.mu must be held.
func (s *Screen) guard(f func()) {
	defer func() {
		if recover() != nil {
			s.resets.Add(1)
			s.shut.close()
			cols, rows := s.Size()
			s.start(cols, rows)
		}
	}()
	f()
}

// Write takes a chunk of the agent's output. It never fails and never waits for the emulator,
// so a relay can hand it the output with io.MultiWriter next to the log; after Close it
// discards what it is given.
func (s *Screen) Write(p []byte) (int, error) {
	s.written.Add(int64(len(p)))
	s.in.Lock()
	if s.closed {
		s.in.Unlock()
		return len(p), nil
	}
	asked := s.queries.scan(p)
	if len(p) > maxPending {
		s.drop(len(s.pending) + len(p) - maxPending)
		s.pending = append(s.pending[:0], p[len(p)-maxPending:]...)
		s.realign()
	} else {
		s.pending = append(s.pending, p...)
		if len(s.pending) > 2*maxPending {
			// Compacting only at twice the limit copies each byte once at most, not once per
			// chunk as keeping exactly the last maxPending would.
			cut := len(s.pending) - maxPending
			s.drop(cut)
			s.pending = s.pending[:copy(s.pending, s.pending[cut:])]
			s.realign()
		}
	}
	s.in.Unlock()
	if asked && s.answering.CompareAndSwap(false, true) {
		go s.answer()
	}
	return len(p), nil
}

// drop counts n bytes of output that the emulator will never see.
func (s *Screen) drop(n int) {
	s.dropped.Add(int64(n))
	s.gap = true
}

// realign moves the start of the pending output, just cut, to a place the emulator can start
// reading from: the next line if one starts soon, else the next escape sequence, else the next
// character, so that the emulator does not print the tail of a sequence or half a character.
func (s *Screen) realign() {
	head := s.pending[:min(len(s.pending), 4<<10)]
	skip := bytes.IndexByte(head, '\n') + 1
	if skip == 0 {
		skip = bytes.IndexByte(head, 0x1b)
	}
	if skip < 0 {
		skip = 0
		for skip < len(head) && head[skip]&0xc0 == 0x80 {
			skip++ // UTF-8 continuation bytes
		}
	}
	if skip > 0 {
		s.dropped.Add(int64(skip))
		s.pending = s.pending[:copy(s.pending, s.pending[skip:])]
	}
}

// answer catches the emulator up so that it answers the query Write saw, without waiting for
// a reader: an agent waiting for its cursor position gets it in milliseconds.
func (s *Screen) answer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answering.Store(false)
	s.catchUp()
}

// catchUp feeds the emulator the output written so far. It takes what is pending once, not
// until nothing is: under a stream faster than the emulator a reader would otherwise never
// return. s.mu must be held.
func (s *Screen) catchUp() {
	s.in.Lock()
	if s.closed {
		s.in.Unlock()
		return
	}
	buf, gap := s.pending, s.gap
	s.pending, s.spare, s.gap = s.spare[:0], nil, false
	s.in.Unlock()
	s.guard(func() {
		if gap {
			_, _ = s.emu.Write([]byte(gapMark))
		}
		if len(buf) > 0 {
			_, _ = s.emu.Write(buf)
		}
	})
	s.in.Lock()
	if !s.closed {
		s.spare = buf[:0]
	}
	s.in.Unlock()
}

// Lines returns the last n lines of the visible screen as a person sees them, top to bottom,
// what `tmux capture-pane -p` prints: trailing spaces trimmed, trailing empty lines dropped,
// no colours, a wide character once. With n <= 0, or more than there are, it returns them all
// (at most the screen's rows: lines scrolled off the top are gone, as there is no scrollback).
func (s *Screen) Lines(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp()
	lines := s.lines()
	if n > 0 && n < len(lines) {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// lines reads the emulator's visible screen. s.mu must be held.
func (s *Screen) lines() []string {
	cols, rows := s.emu.Width(), s.emu.Height()
	lines := make([]string, 0, rows)
	var b strings.Builder
	for y := range rows {
		b.Reset()
		for x := 0; x < cols; x++ {
			c := s.emu.CellAt(x, y)
			if c == nil {
				continue
			}
			switch text := printable(c.Content); {
			case text != "":
				b.WriteString(text)
			case c.Width > 0:
				b.WriteByte(' ')
				// A zero cell follows a wide character, whose second column it is: skipped.
			}
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// printable is a cell's content without controls. vt v0.1.0 prints a C1 control that comes
// UTF-8-encoded (U+0080–U+009F) into a cell, where xterm obeys or ignores it; a caller showing
// Lines on a terminal must not get it.
func printable(content string) string {
	if len(content) == 1 && content[0] >= 0x20 && content[0] < 0x7f {
		return content // ASCII: nearly every cell
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f && r < 0xa0 {
			return -1
		}
		return r
	}, content)
}

// Text returns the visible screen as Lines(0) does, each line ended by a newline, as
// `tmux capture-pane -p` prints it (with its trailing empty lines dropped); "" for a blank
// screen.
func (s *Screen) Text() string {
	var b strings.Builder
	for _, l := range s.Lines(0) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// Hash returns a 64-bit FNV-1a hash of Text: two reads with the same hash show the same text,
// colours aside. It emulates what is pending, as Lines does; a watcher that polls often can
// ask Written first, which costs nothing, and hash only when output came.
func (s *Screen) Hash() uint64 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, s.Text())
	return h.Sum64()
}

// Written returns how many bytes of output Write has been given: a change counter that costs
// one atomic load. Output may leave the screen as it was (a spinner frame redrawn the same),
// which Hash tells apart.
func (s *Screen) Written() int64 {
	return s.written.Load()
}

// Dropped returns how many bytes of output the emulator never saw, because more than 128 KiB
// came between two reads of the screen; see Screen.
func (s *Screen) Dropped() int64 {
	return s.dropped.Load()
}

// Resize changes the terminal's size, as the pty's was (TIOCSWINSZ), after emulating the
// output written at the old size. Lines longer than the new width are cut, not reflowed, as
// xterm does; sizes below 1 are taken as 1.
func (s *Screen) Resize(cols, rows int) {
	cols, rows = max(cols, 1), max(rows, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp()
	s.size.Store(uint64(cols)<<32 | uint64(rows))
	s.guard(func() { s.emu.Resize(cols, rows) })
}

// Size returns the terminal's columns and rows.
func (s *Screen) Size() (cols, rows int) {
	v := s.size.Load()
	return int(v >> 32), int(uint32(v))
}

// ReplyTo sets where the screen's answers to the agent's questions go: pass the pty's master
// side. Some agent CLIs ask the terminal for the cursor position (DSR, CSI 6 n) or its
// attributes (DA, CSI c) at start and wait for the answer; with no terminal but this one on the
// pty, only the emulator can give it. Answers come from another goroutine, a few milliseconds
// after Write gets the question, so if other goroutines write to the same pty, w must keep
// their writes apart (a mutex around Write). Until ReplyTo is called, and after ReplyTo(nil),
// answers are discarded; write errors are ignored, as the pty may be gone.
//
// Questions are seen in ESC-introduced CSI and OSC sequences; a raw 8-bit CSI (byte 0x9B) is
// answered only at the next read of the screen.
func (s *Screen) ReplyTo(w io.Writer) {
	s.sink.mu.Lock()
	defer s.sink.mu.Unlock()
	s.sink.w = w
}

// Close stops the goroutine that carries answers and discards output written after it. The
// screen can still be read, as it was at Close. It returns nil.
func (s *Screen) Close() error {
	s.in.Lock()
	s.closed = true
	s.pending, s.spare = nil, nil
	s.in.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shut.close()
	return nil
}

// replySink is where the emulator's answers go, shared with drain, which must not hold the
// Screen or runtime.AddCleanup could never run.
type replySink struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *replySink) write(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil {
		_, _ = r.w.Write(p)
	}
}

// drain carries the emulator's answers to sink until the emulator is closed.
func drain(e *vt.Emulator, sink *replySink) {
	buf := make([]byte, 512)
	for {
		n, err := e.Read(buf)
		if n > 0 {
			sink.write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// shutter closes the emulator once, from Close or from the cleanup of a Screen never closed.
type shutter struct {
	once sync.Once
	emu  *vt.Emulator
}

func (sh *shutter) close() {
	sh.once.Do(func() {
		// Closing the answers' pipe ends drain's Read. Emulator.Close would too, but in vt
		// v0.1.0 it sets a flag that Read reads unlocked, a data race with drain. The
		// emulator's later answers fail on the closed pipe, and it ignores that.
		if c, ok := sh.emu.InputPipe().(io.Closer); ok {
			_ = c.Close()
			return
		}
		_ = sh.emu.Close()
	})
}

// noScrollback takes away the scrollback of both of e's screens, main and alternate.
// charmbracelet/x/vt v0.1.0 gives each a 10000-line scrollback; SetScrollbackSize bounds the
// main screen's only, and to no less than one line, while the alternate screen's fills with
// every ED 2 and every scroll of a full-screen TUI: up to 10000 lines of 112-byte cells, 134 MB
// at 120 columns. Screen reads the visible screen only, so neither is wanted, but the screens
// are unexported fields, hence reflect. It reports whether it could; if a later vt renames the
// field, the main screen is still bounded and TestAltScreenMemory fails.
func noScrollback(e *vt.Emulator) bool {
	e.SetScrollbackSize(1)
	v := reflect.ValueOf(e).Elem().FieldByName("scrs")
	if !v.IsValid() || v.Kind() != reflect.Array || v.Type().Elem() != reflect.TypeFor[vt.Screen]() {
		return false
	}
	for i := range v.Len() {
		(*vt.Screen)(unsafe.Pointer(v.Index(i).UnsafeAddr())).SetScrollback(nil)
	}
	return true
}

// clampCounts bounds the counts of the sequences vt v0.1.0 carries out one step at a time: REP
// (CSI n b) prints the last character n times, ECH (CSI n X) erases n cells, CHT and CBT
// (CSI n I, CSI n Z) move n tab stops, each in a loop of n, and n can be 2³¹−2: REP of
// 99999999 takes minutes, holding every reader of the screen. Each count is cut to what has the
// same effect on the screen: ECH, CHT and CBT stop at the line's end, and REP beyond a full
// screen repaints the same character everywhere, so only the cursor's column (n mod cols)
// matters. vt calls the handlers for a sequence last-registered first, with the same
// parameters, so these cut the count in place and return false to let vt's own carry it out.
func clampCounts(e *vt.Emulator) {
	clamp := func(limit func(n int) int) vt.CsiHandler {
		return func(params ansi.Params) bool {
			if len(params) > 0 {
				if n := params[0].Param(1); n != limit(n) {
					params[0] = ansi.Param(limit(n))
				}
			}
			return false
		}
	}
	line := func(n int) int { return min(n, e.Width()) }
	for _, cmd := range []int{'X', 'I', 'Z'} {
		e.RegisterCsiHandler(cmd, clamp(line))
	}
	// DECSTBM (CSI top ; bottom r) with the bottom below the screen: vt v0.1.0 keeps it, and
	// its next scroll indexes past the screen and panics. xterm takes the screen's last row.
	e.RegisterCsiHandler('r', func(params ansi.Params) bool {
		if len(params) > 1 && params[1].Param(0) > e.Height() {
			params[1] = ansi.Param(e.Height())
		}
		return false
	})
	e.RegisterCsiHandler('b', clamp(func(n int) int {
		if full := e.Width() * e.Height(); n > full {
			return full + (n-full)%e.Width()
		}
		return n
	}))
}

// queryScanner finds, in output streaming past in chunks, the end of each sequence that asks the
// terminal a question vt answers: DSR (CSI 5 n, CSI 6 n, CSI ? 6 n), DA (CSI c, CSI > c),
// DECRQM (CSI ? Ps $ p) and the colour queries (OSC 10, 11, 12 with "?"; OSC 4 and 13–19 too,
// as an early catch-up costs little). It is Strip's machine cut down to what tells those apart,
// and it skips text with bytes.IndexByte, so Write stays at memory speed.
type queryScanner struct {
	st      uint8
	dollar  bool // the CSI has the intermediate $
	osc     int  // the OSC's number
	numDone bool // the OSC's number is complete
	ask     bool // the OSC's payload has a ?
}

func (q *queryScanner) scan(p []byte) (found bool) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == 0x18 || c == 0x1a {
			q.st = ground
			continue
		}
		switch q.st {
		case ground, ctrlStr:
			// Text, and DCS, SOS, PM, APC payloads, end only at an ESC that matters here.
			j := bytes.IndexByte(p[i:], 0x1b)
			if j < 0 {
				return found
			}
			i += j
			q.st = escape
		case escape:
			switch {
			case c == '[':
				q.st, q.dollar = csiSeq, false
			case c == ']':
				q.st, q.osc, q.numDone, q.ask = oscStr, 0, false, false
			case c == 'P' || c == 'X' || c == '^' || c == '_':
				q.st = ctrlStr
			case c == 0x1b || c < 0x20:
			default:
				q.st = ground
			}
		case csiSeq:
			switch {
			case c == 0x1b:
				q.st = escape
			case c == '$':
				q.dollar = true
			case c >= 0x40 && c <= 0x7e:
				q.st = ground
				found = found || c == 'n' || c == 'c' || (c == 'p' && q.dollar)
			}
		case oscStr:
			switch {
			case c == 0x07 || c == 0x1b:
				found = found || (q.ask && (q.osc == 4 || q.osc >= 10 && q.osc <= 19))
				q.st = ground
				if c == 0x1b {
					q.st = escape // ST's first byte, or a new sequence
				}
			case c == '?':
				q.ask = true
			case !q.numDone && c >= '0' && c <= '9':
				q.osc = min(q.osc*10+int(c-'0'), 1000)
			default:
				q.numDone = true
			}
		}
	}
	return found
}

// CursorRow returns the row the cursor is on as Lines shows it, whether the cursor stands
// after the row's text (nothing at or right of it), and whether no row below has text: a
// prompt waiting for its answer has all three.
func (s *Screen) CursorRow() (row string, atEnd, last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp()
	lines := s.lines()
	pos := s.emu.CursorPosition()
	if pos.Y < len(lines) {
		row = lines[pos.Y]
	}
	return row, pos.X >= ansi.StringWidth(row), pos.Y >= len(lines)-1
}
