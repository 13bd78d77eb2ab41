package screen

import (
	"io"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// The states of Strip's machine. They follow the DEC/ANSI parser of Paul Williams
// (vt100.net/emu/dec_ansi_parser), the one xterm, VTE and the vt library behave like, cut down
// to what deciding "printed or not" needs: parameters are skipped, never parsed.
const (
	ground   = iota // text
	escape          // after ESC
	escInter        // ESC and intermediates (0x20–0x2F), waiting for the final byte
	csiSeq          // CSI: parameters and intermediates, waiting for the final byte
	oscStr          // OSC: ended by BEL or ST
	ctrlStr         // DCS, SOS, PM, APC: ended by ST only
)

// plain marks the bytes copied through as they are in ground state: printable ASCII, newline
// and tab. Newline and tab are the only controls a reader of the text still needs.
var plain = func() (t [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = true
	}
	t['\n'], t['\t'] = true, true
	return t
}()

// dropped marks the bytes dropped in ground state that change no state: the C0 controls but
// newline and tab (kept) and ESC, CAN and SUB (which do), and DEL.
var dropped = func() (t [256]bool) {
	for b := 0; b < 0x20; b++ {
		t[b] = true
	}
	t['\n'], t['\t'], t[0x1b], t[0x18], t[0x1a], t[0x7f] = false, false, false, false, false, true
	return t
}()

// Strip removes every terminal control sequence from s, leaving the text a person would read:
// CSI (colours, cursor moves, private modes), OSC (titles, hyperlinks; ended by BEL or ST),
// DCS, SOS, PM and APC (ended by ST), two-byte escapes and charset designations (ESC ( B),
// their C1 forms (U+0080–U+009F, as xterm reads them in UTF-8), and the C0 controls but
// newline and tab: carriage return, backspace and bell are dropped, not obeyed, so a progress
// bar redrawn with \r reads as its frames one after another (Screen shows it as it last looked).
// An unterminated sequence at the end is dropped, and so are bytes that are not UTF-8 (a raw
// 0x9B byte included): keeping them could let the removal of a sequence join two halves into a
// character, and a terminal shows them as U+FFFD, not as what they meant.
//
// Strip(Strip(s)) == Strip(s): what it keeps is printable ASCII, newline, tab and runes from
// U+00A0 on, which it keeps again.
func Strip(s string) string {
	i := 0
	for i < len(s) && plain[s[i]] {
		i++
	}
	if i == len(s) {
		return s // already plain ASCII: most log lines of a non-terminal run
	}
	b := make([]byte, i, len(s))
	copy(b, s)
	b, _, _ = strip(b, s, i, ground, true)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b)) // b is not used again: no copy (strings.Builder's way)
}

// strip is Strip's machine: it appends to b what is kept of s from s[i], starting in state
// st, and returns b, the state it ends in and how much of s it consumed. Unless final, it
// stops before a UTF-8 character cut off at the end of s (the next piece of a stream holds
// the rest); when final, such bytes are dropped like any that are not UTF-8.
func strip(b []byte, s string, i, st int, final bool) ([]byte, int, int) {
	for i < len(s) {
		c := s[i]
		switch {
		case st == ground && (plain[c] || c >= 0x80):
			// The run of text up to the next control: one copy, however many characters.
			j := textRun(s, i)
			if j > i {
				b = append(b, s[i:j]...)
				i = j
				continue
			}
		case st == ground && dropped[c]:
			// C0 controls and DEL a terminal would obey or ignore (CR, BS, BEL, NUL…): dropped
			// in one go.
			i++
			for i < len(s) && dropped[s[i]] {
				i++
			}
			continue
		case st == csiSeq && c >= 0x20 && c <= 0x3f:
			// Parameters, private markers and intermediates: skipped in one go.
			i++
			for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
				i++
			}
			continue
		case (st == oscStr || st == ctrlStr) && c >= 0x20 && c < 0x80:
			// Payload: printable ASCII skipped in one go; controls and non-ASCII (one of which
			// may be C1 ST) are looked at one by one below.
			i++
			for i < len(s) && s[i] >= 0x20 && s[i] < 0x80 {
				i++
			}
			continue
		}
		if c >= 0x80 {
			var whole bool
			if b, st, i, whole = stripRune(b, s, i, st, final); !whole {
				return b, st, i // the rest of the character comes with the next piece
			}
			continue
		}
		i++
		// Transitions from any state (Williams' "anywhere"): ESC starts a new escape, even
		// inside a string, where it is the first byte of ST; CAN and SUB abort.
		switch c {
		case 0x1b:
			st = escape
		case 0x18, 0x1a:
			st = ground
		default:
			b, st = stripByte(b, c, st)
		}
	}
	return b, st, i
}

// stripRune moves Strip's machine over the character from 0x80 on that starts at s[i] and
// returns b, the new state and the index after the character. Unless final, a character cut
// off at the end of s is left for the next piece: whole is false and i does not move.
func stripRune(b []byte, s string, i, st int, final bool) (_ []byte, _ int, _ int, whole bool) {
	if !final && !utf8.FullRuneInString(s[i:]) {
		return b, st, i, false
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && size == 1:
		// Not UTF-8: dropped whatever the state.
	case r < 0xa0:
		st = c1(r)
	case st == ground:
		b = append(b, s[i:i+size]...)
	case st == oscStr || st == ctrlStr:
		// Part of the string's payload (a title in UTF-8, say).
	default:
		// A character cuts an escape or CSI short, as in xterm, and is shown.
		st = ground
		b = append(b, s[i:i+size]...)
	}
	return b, st, i + size, true
}

// stripByte moves Strip's machine in state st over the ASCII byte c, one that neither the
// runs skipped in one go nor the transitions from any state took, and returns b and the new
// state.
func stripByte(b []byte, c byte, st int) ([]byte, int) {
	switch st {
	case ground:
		// The other C0 controls and DEL: dropped.
	case escape:
		switch {
		case c == '[':
			st = csiSeq
		case c == ']':
			st = oscStr
		case c == 'P' || c == 'X' || c == '^' || c == '_': // DCS, SOS, PM, APC
			st = ctrlStr
		case c >= 0x20 && c <= 0x2f:
			st = escInter // ESC ( B and the like: one byte more
		case c >= 0x30 && c <= 0x7e:
			st = ground // ESC 7, ESC =, ESC c…: complete
		default:
			b = executeC0(b, c)
		}
	case escInter:
		switch {
		case c >= 0x20 && c <= 0x2f:
		case c >= 0x30 && c <= 0x7e:
			st = ground
		default:
			b = executeC0(b, c)
		}
	case csiSeq:
		switch {
		case c >= 0x20 && c <= 0x3f: // parameters, private markers, intermediates
		case c >= 0x40 && c <= 0x7e:
			st = ground
		default:
			b = executeC0(b, c)
		}
	case oscStr:
		if c == 0x07 {
			st = ground // xterm's BEL terminator, the usual one for titles
		}
	case ctrlStr:
		// Payload: only ST (or CAN, SUB) ends it.
	}
	return b, st
}

// textRun returns the end of the text that starts at s[i]: printable ASCII, newline, tab and
// UTF-8 characters from U+00A0 on, up to the first byte that is none of these.
func textRun(s string, i int) int {
	for i < len(s) {
		c := s[i]
		switch {
		case plain[c]:
			i++
		case c < 0x80:
			return i
		case c >= 0xe1 && c <= 0xec && i+2 < len(s) && s[i+1]&0xc0 == 0x80 && s[i+2]&0xc0 == 0x80:
			// Three-byte characters with no overlong or surrogate forms to rule out: box
			// drawing, braille spinners, arrows and most CJK, the bulk of an agent's non-ASCII.
			i += 3
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r < 0xa0 || (r == utf8.RuneError && size == 1) {
				return i // a C1 control, or not UTF-8
			}
			i += size
		}
	}
	return i
}

// executeC0 handles a C0 control met inside an escape or CSI sequence: a terminal obeys it
// without ending the sequence, so a newline or tab there is kept and the sequence goes on.
func executeC0(b []byte, c byte) []byte {
	if c == '\n' || c == '\t' {
		b = append(b, c)
	}
	return b
}

// c1 is the state a C1 control puts Strip's machine in, from any state, as 8-bit controls do
// in Williams' parser: the introducers open their sequence, ST and the rest (NEL, IND, …) end
// whatever was open and print nothing.
func c1(r rune) int {
	switch r {
	case 0x9b:
		return csiSeq
	case 0x9d:
		return oscStr
	case 0x90, 0x98, 0x9e, 0x9f: // DCS, SOS, PM, APC
		return ctrlStr
	}
	return ground
}

// Summary is a run record's output_summary: the last n characters of Strip(output), surrounding
// whitespace trimmed first, so the n characters are ones that say something. Bytes that are not
// UTF-8 are dropped (by Strip), and so a summary is always valid UTF-8 for the record's JSON.
func Summary(output []byte, n int) string {
	if n <= 0 {
		return ""
	}
	s := strings.TrimSpace(Strip(string(output)))
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

// StripWriter is Strip for a stream (a log printed as it is read, or followed as it grows):
// what it writes to its writer is what Strip would make of everything written to it, piece by
// piece, in memory bounded by the largest piece. A sequence or a UTF-8 character cut between
// two writes is carried over to the next.
type StripWriter struct {
	w    io.Writer
	st   int
	tail [utf8.UTFMax]byte // a UTF-8 character cut off at the end of the last write
	n    int               // bytes in tail
	buf  []byte
}

// NewStripWriter returns a StripWriter writing to w.
func NewStripWriter(w io.Writer) *StripWriter { return &StripWriter{w: w} }

// Write strips p and writes what is kept. It reports p consumed unless the writer fails.
func (s *StripWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var in string
	if s.n > 0 {
		in = string(s.tail[:s.n]) + string(p)
	} else {
		in = unsafe.String(&p[0], len(p)) // read only, and not kept past this call
	}
	var used int
	s.buf, s.st, used = strip(s.buf[:0], in, 0, s.st, false)
	s.n = copy(s.tail[:], in[used:])
	if len(s.buf) > 0 {
		if _, err := s.w.Write(s.buf); err != nil {
			return 0, err
		}
	}
	if cap(s.buf) > 1<<20 {
		s.buf = nil // one huge write does not keep its buffer
	}
	return len(p), nil
}
