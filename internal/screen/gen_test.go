package screen

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
)

// oldANSI is supervise.StripANSI's expression before Strip, kept for the benchmark's ratio.
var oldANSI = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// agentOutput makes about size bytes that look like what agent CLIs print on a terminal, the
// same every time: coloured log lines (SGR 16, 256 and truecolour), lines longer than a screen
// row, spinner frames redrawn with \r and EL, an Ink-style input box redrawn by moving the
// cursor up and erasing (Claude Code, Gemini CLI), absolute moves and a scroll region (ratatui
// inline viewports, Codex CLI), window titles and hyperlinks (OSC 0, OSC 8), and non-ASCII.
func agentOutput(size int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"reading", "internal/supervise/output.go", "func", "return", "err", "✓",
		"tests", "passed", "→", "building", "the", "module", "github.com/agentfleet/fleet", "•",
		"diff", "+", "-", "const", "café", "日本語", "nil", "ok", "Edit", "Bash(go test ./...)"}
	spin := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
	line := func(n int) string {
		var l strings.Builder
		for l.Len() < n {
			w := words[r.IntN(len(words))]
			switch r.IntN(8) {
			case 0:
				fmt.Fprintf(&l, "\x1b[38;2;%d;%d;%dm%s\x1b[39m ", r.IntN(256), r.IntN(256), r.IntN(256), w)
			case 1:
				fmt.Fprintf(&l, "\x1b[1;3%dm%s\x1b[0m ", r.IntN(8), w)
			case 2:
				fmt.Fprintf(&l, "\x1b[38;5;%dm%s\x1b[m ", r.IntN(256), w)
			default:
				l.WriteString(w + " ")
			}
		}
		return l.String()
	}
	var b strings.Builder
	for b.Len() < size {
		switch k := r.IntN(20); {
		case k < 10:
			b.WriteString(line(30+r.IntN(80)) + "\r\n")
		case k < 12:
			b.WriteString(line(150+r.IntN(300)) + "\r\n") // wraps on a 120-column screen
		case k < 15:
			for i := range 6 {
				fmt.Fprintf(&b, "\r\x1b[2K\x1b[38;5;174m%s\x1b[39m Thinking… (%ds · ↑ %d tokens · esc to interrupt)",
					spin[i%len(spin)], i, r.IntN(5000))
			}
			b.WriteString("\r\n")
		case k < 18:
			b.WriteString("\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K\x1b[G")
			b.WriteString("\x1b[38;5;246m╭" + strings.Repeat("─", 100) + "╮\x1b[39m\r\n")
			b.WriteString("\x1b[38;5;246m│\x1b[39m > " + line(40) + "\x1b[K\r\n")
			b.WriteString("\x1b[38;5;246m╰" + strings.Repeat("─", 100) + "╯\x1b[39m\r\n")
			b.WriteString("  \x1b[2m? for shortcuts\x1b[22m")
		case k < 19:
			fmt.Fprintf(&b, "\x1b7\x1b[1;%dr\x1b[%d;1H\r\n%s\x1b[r\x1b8", 30, 30, line(60))
			fmt.Fprintf(&b, "\x1b[?25l\x1b[%d;%dH%s\x1b[?25h\r\n", 1+r.IntN(40), 1+r.IntN(100), line(10))
		default:
			fmt.Fprintf(&b, "\x1b]0;✳ %s\x07\x1b]8;;https://example.com/%d\x1b\\link\x1b]8;;\x1b\\\r\n",
				words[r.IntN(len(words))], r.IntN(100))
		}
	}
	return []byte(b.String())
}
