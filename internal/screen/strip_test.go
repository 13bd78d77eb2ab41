package screen

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// stripTests name the terminal feature each case is; the sequences are the ones xterm documents
// (ctlseqs) and agent CLIs emit.
var stripTests = []struct {
	feature, in, want string
}{
	{"plain text", "plain", "plain"},
	{"empty", "", ""},
	{"newline and tab kept", "a\tb\nc", "a\tb\nc"},
	{"SGR colour and reset (CSI m)", "\x1b[1;31mred\x1b[0m text", "red text"},
	{"SGR truecolour with colons (CSI 38:2::r:g:b m)", "\x1b[38:2::255:0:0mx\x1b[m", "x"},
	{"SGR 256 colours", "\x1b[38;5;208morange\x1b[39m", "orange"},
	{"erase line and cursor to column 1 (EL, CHA)", "\x1b[2K\x1b[1Gline", "line"},
	{"cursor position (CUP)", "\x1b[12;40Hhere", "here"},
	{"DEC private mode: hide cursor (CSI ? 25 l)", "\x1b[?25lx\x1b[?25h", "x"},
	{"alternate screen (CSI ? 1049 h)", "\x1b[?1049hTUI\x1b[?1049l", "TUI"},
	{"bracketed paste and synchronized output modes", "\x1b[?2004h\x1b[?2026hx\x1b[?2026l", "x"},
	{"cursor style with intermediate (DECSCUSR CSI 2 SP q)", "\x1b[2 qx", "x"},
	{"request mode with intermediate (DECRQM CSI ? 2026 $ p)", "\x1b[?2026$px", "x"},
	{"kitty keyboard protocol push and query (CSI > 1 u, CSI ? u)", "\x1b[>1u\x1b[?ux", "x"},
	{"cursor position report request (DSR CSI 6 n)", "a\x1b[6nb", "ab"},
	{"OSC 0 window title ended by BEL", "\x1b]0;title\x07after", "after"},
	{"OSC 2 title ended by ST (ESC \\)", "\x1b]2;title\x1b\\after", "after"},
	{"OSC 8 hyperlink", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
	{"OSC title in UTF-8 is dropped whole", "\x1b]0;✳ Claude\x07ok", "ok"},
	{"OSC 52 clipboard with newline inside", "\x1b]52;c;YQo=\n\x07z", "z"},
	{"DCS ended by ST (DECRQSS)", "\x1bP$qm\x1b\\x", "x"},
	{"DCS tmux passthrough carries an ESC: its ESC ends the DCS", "\x1bPtmux;\x1b\x1b]0;t\x07\x1b\\x", "x"},
	{"DCS is not ended by BEL", "\x1bPabc\x07def\x1b\\x", "x"},
	{"APC kitty graphics ended by ST", "\x1b_Ga=T;AAAA\x1b\\img", "img"},
	{"SOS ended by ST", "\x1bXsos\x1b\\x", "x"},
	{"PM ended by ST", "\x1b^pm\x1b\\x", "x"},
	{"charset designation G0 = ASCII (SCS ESC ( B)", "\x1b(Bx", "x"},
	{"charset designation G1 = DEC graphics (SCS ESC ) 0)", "\x1b)0x", "x"},
	{"UTF-8 mode (ESC % G)", "\x1b%Gx", "x"},
	{"screen alignment test (DECALN ESC # 8)", "\x1b#8x", "x"},
	{"save and restore cursor (DECSC ESC 7, DECRC ESC 8)", "\x1b7a\x1b8b", "ab"},
	{"keypad modes (DECKPAM ESC =, DECKPNM ESC >)", "\x1b=a\x1b>b", "ab"},
	{"reset (RIS ESC c)", "\x1bcx", "x"},
	{"reverse index (RI ESC M)", "\x1bMx", "x"},
	{"8-bit CSI as UTF-8 (U+009B)", "\u009b31mred", "red"},
	{"8-bit OSC ended by 8-bit ST (U+009D … U+009C)", "\u009d0;t\u009cx", "x"},
	{"8-bit DCS ended by ESC \\", "\u0090q\x1b\\x", "x"},
	{"8-bit NEL (U+0085) is a control, not text", "a\u0085b", "ab"},
	{"byte 0x9B inside a UTF-8 character is text (ě is C4 9B)", "Děkuji ě", "Děkuji ě"},
	{"raw 0x9B byte is not UTF-8: dropped alone", "a\x9b31mb", "a31mb"},
	{"carriage return of a progress bar", "progress 10%\rprogress 100%\r\n", "progress 10%progress 100%\n"},
	{"backspace, bell, NUL, DEL", "a\bb\x07c\x00d\x7fe", "abcde"},
	{"other C0 (VT, FF, SO, SI)", "a\vb\fc\x0ed\x0fe", "abcde"},
	{"CAN aborts a CSI; its rest is text (xterm)", "\x1b[31\x18m", "m"},
	{"SUB aborts an OSC", "\x1b]0;ti\x1atle", "tle"},
	{"ESC inside a CSI starts over", "\x1b[31\x1b[32mx", "x"},
	{"newline inside a CSI is obeyed", "\x1b[3\n1mx", "\nx"},
	{"ESC ESC", "\x1b\x1b[mx", "x"},
	{"a character after ESC cuts it short and shows", "\x1bé", "é"},
	{"a character inside a CSI cuts it short and shows", "\x1b[1éx", "éx"},
	{"unterminated CSI at the end", "text\x1b[38;5", "text"},
	{"unterminated OSC at the end", "text\x1b]0;title", "text"},
	{"lone ESC at the end", "text\x1b", "text"},
	{"unterminated charset designation at the end", "text\x1b(", "text"},
	{"invalid UTF-8 dropped", "a\xffb\xc3", "ab"},
	{"removing a sequence joins no character", "\xc3\x1b[m\xa9", ""},
	{"wide and combined characters kept", "日本 👍🏽 e\u0301", "日本 👍🏽 e\u0301"},
}

func TestStrip(t *testing.T) {
	for _, tt := range stripTests {
		if got := Strip(tt.in); got != tt.want {
			t.Errorf("%s: Strip(%q) = %q, want %q", tt.feature, tt.in, got, tt.want)
		}
	}
}

// stripStream is Strip through a StripWriter, s written in pieces of n bytes.
func stripStream(s string, n int) string {
	var out bytes.Buffer
	w := NewStripWriter(&out)
	for len(s) > 0 {
		k := min(n, len(s))
		w.Write([]byte(s[:k]))
		s = s[k:]
	}
	return out.String()
}

// TestStripWriter: a stream stripped piece by piece is what Strip makes of it whole, however it
// is cut (swarm logs streams a log of any size through it).
func TestStripWriter(t *testing.T) {
	for _, tt := range stripTests {
		for _, n := range []int{1, 2, 3, 5, 1 << 20} {
			if got := stripStream(tt.in, n); got != tt.want {
				t.Errorf("%s: stripStream(%q, %d) = %q, want %q", tt.feature, tt.in, n, got, tt.want)
			}
		}
	}
}

// TestStripPlainAllocatesNothing: most of a non-terminal run's log is plain ASCII, returned as is.
func TestStripPlainAllocatesNothing(t *testing.T) {
	s := strings.Repeat("ok 	github.com/agentfleet/fleet 0.1s\n", 100)
	if n := testing.AllocsPerRun(10, func() { _ = Strip(s) }); n != 0 {
		t.Errorf("Strip(plain) allocates %v times, want 0", n)
	}
}

// TestSummary carries supervise.Summary's cases over: the run records written before and after
// the move must agree.
func TestSummary(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"", 500, ""},
		{"  \n\t ", 500, ""},
		{"\x1b[32m done \x1b[0m\n", 500, "done"},
		{"abcdef", 3, "def"},
		{"abcdef", 0, ""},
		{"abcdef", -1, ""},
		{"héllo wörld", 5, "wörld"},
		{"a\xffb\xfe", 500, "ab"},
		{"progress 10%\rprogress 100%\r\n", 500, "progress 10%progress 100%"},
		{"one two", 4, " two"}, // trimmed before the cut, as supervise.Summary did
	}
	for _, tt := range tests {
		if got := Summary([]byte(tt.in), tt.n); got != tt.want {
			t.Errorf("Summary(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
	out := strings.Repeat("é", 600) + "\x1b[32m done \x1b[0m\n"
	got := Summary([]byte(out), 500)
	if n := utf8.RuneCountInString(got); n != 500 || !strings.HasSuffix(got, "é done") {
		t.Errorf("Summary(600×é + done, 500) = %d runes ending %q, want 500 ending in \"é done\"", n, got[len(got)-10:])
	}
}

func FuzzStrip(f *testing.F) {
	for _, tt := range stripTests {
		f.Add(tt.in)
	}
	f.Add(string(agentOutput(4 << 10)))
	f.Fuzz(func(t *testing.T, s string) {
		got := Strip(s)
		for i := 0; i < len(got); i++ {
			if c := got[i]; (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				t.Fatalf("Strip(%q) = %q: control byte %#x at %d", s, got, c, i)
			}
		}
		for i, r := range got {
			if r >= 0x80 && r < 0xa0 {
				t.Fatalf("Strip(%q) = %q: C1 control %U at %d", s, got, r, i)
			}
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Strip(%q) = %q: not UTF-8", s, got)
		}
		if again := Strip(got); again != got {
			t.Fatalf("Strip(Strip(%q)) = %q, want %q", s, again, got)
		}
		for _, n := range []int{1, 7} {
			if streamed := stripStream(s, n); streamed != got {
				t.Fatalf("stripStream(%q, %d) = %q, want Strip's %q", s, n, streamed, got)
			}
		}
	})
}

func BenchmarkStrip(b *testing.B) {
	s := string(agentOutput(1 << 20))
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Strip(s)
	}
}

// BenchmarkStripRegexp is supervise.StripANSI's regular expression, which Strip replaces, on
// the same data: the ratio is the point of the hand-written machine.
func BenchmarkStripRegexp(b *testing.B) {
	s := string(agentOutput(1 << 20))
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = strings.ReplaceAll(oldANSI.ReplaceAllString(s, ""), "\r", "")
	}
}
