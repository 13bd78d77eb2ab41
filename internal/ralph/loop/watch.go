package loop

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/ralph/hook"
	"github.com/agentfleet/fleet/internal/screen"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/worker"
)

// How an iteration is watched. Every pollEvery the monitor asks the worker's supervisor for
// its screen over the control socket (one request on a connection kept open: the Python swarm
// ran tmux capture-pane every 2 s). The supervisor answers "not running" the moment the agent
// exited, and records its exit code in state.json an instant later, so the next iteration
// starts within a poll of the end, not 2 s after it.
//
// The done pattern is looked for in the agent's output log (the supervisor's copy of all it
// printed), from the point the typed prompt's echo ended: what the agent said, never the
// prompt itself (the Python swarm's baseline was the padded pane, which stopped being a prefix
// as soon as anything was printed, so a prompt naming its own done marker ended the loop at
// once). The log outlives the agent, so a marker printed just before it exits counts too (the
// Python swarm captured the closed window, which always failed). Output lines that are a piece
// of the prompt (an agent showing the conversation again) do not count either.
const pollEvery = 100 * time.Millisecond

type resultKind int

const (
	resExited resultKind = iota
	resDone
	resInactive
	resCompaction
	resContext
	resLimited
	resBudget    // the running iteration brought the loop to its budget (--hard-budget)
	resControl   // the loop was stopped, killed or removed: the stopper deals with the worker
	resCancelled // the monitor was told to go
)

type result struct {
	kind    resultKind
	out     *worker.Outcome // how the agent ended, when it did
	exited  bool            // the agent had exited (done found in its last words)
	pct     int
	timeout int
	resetAt time.Time
}

func (r result) exitCode() *int64 {
	if r.out == nil {
		return nil
	}
	return r.out.ExitCode
}

// The Python swarm's screen patterns: stuck screens warned about once per iteration, and the
// fatal one that ends an iteration.
var stuckPatterns = []struct{ text, msg string }{
	{"Select login method", "Worker stuck at login prompt. Check auth credentials."},
	{"Choose the text style", "Worker stuck at theme picker. Check settings.local.json."},
	{"looks best with your terminal", "Worker stuck at theme picker. Check settings.local.json."},
	{"Paste code here", "Worker stuck at OAuth code entry. Use ANTHROPIC_API_KEY instead."},
}

const fatalPattern = "Compacting conversation"

// DefaultLimitWait is how long a usage limit holds the loop when its message names no time.
const DefaultLimitWait = 30 * time.Minute

// watch follows an iteration until it ends one way or another. A context nudge and a usage
// limit met while the agent runs are dealt with here, and the watch goes on.
func (l *app) watch(ctx context.Context, wake chan struct{}, it *iteration) result {
	st, err := l.st.load()
	if err != nil {
		return result{kind: resControl}
	}
	w := l.newWatcher(st, it)
	defer w.close()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return result{kind: resCancelled}
			case <-wake:
			case <-tick.C:
			}
		}
		if cur, err := l.st.load(); err != nil || cur.Status == StatusStopped || cur.Status == StatusFailed {
			return result{kind: resControl}
		} else {
			w.st = cur
		}
		scr, running := w.screen()
		if !running {
			if res, ended := w.ended(ctx); ended {
				return res
			}
			continue // starting, or its socket is busy: look again
		}
		if res, ended := w.look(ctx, wake, scr); ended {
			return res
		}
	}
}

// watcher is one watch: what it looks for in the iteration's agent, and what it saw so far.
type watcher struct {
	l       *app
	it      *iteration
	st      *State         // the loop's state, as of the last poll
	done    *regexp.Regexp // the done pattern, or nil
	lr      *logReader     // the agent's words in its output log
	prof    *agent.Profile
	timeout time.Duration // inactivity timeout; 0: none
	ctl     *supervise.Control

	lastHash                        uint64 // of the screen's last lines
	lastChange, lastSaved, lastCost time.Time
	warned                          map[string]bool // the stuck patterns warned about
}

func (l *app) newWatcher(st *State, it *iteration) *watcher {
	w := &watcher{l: l, it: it, st: st, lastChange: time.Now(), warned: map[string]bool{},
		timeout: time.Duration(st.InactivityTimeout) * time.Second}
	if st.DonePattern != nil && *st.DonePattern != "" {
		w.done, _ = regexp.Compile(*st.DonePattern) // an invalid pattern checks nothing, as before
	}
	prompt, _ := readPrompt(st.PromptFile)
	w.lr = &logReader{path: l.home.LogPath(l.st.name), pos: it.offset, prompt: normalize(prompt)}
	if st.Worker != nil {
		w.prof, _ = l.home.Profile(st.Worker.Profile, st.Worker.Cmd)
	}
	return w
}

func (w *watcher) close() {
	if w.ctl != nil {
		w.ctl.Close()
	}
	w.lr.close()
}

// screen asks the worker's supervisor for the agent's screen, and whether the agent runs (false
// too when the supervisor cannot be asked: the connection is opened again at the next poll).
func (w *watcher) screen() ([]string, bool) {
	if w.ctl == nil {
		w.ctl, _ = w.l.home.Control(w.it.w)
	}
	if w.ctl == nil {
		return nil, false
	}
	resp, err := w.ctl.Do(supervise.Request{Op: supervise.OpScreen})
	if err != nil {
		w.ctl.Close()
		w.ctl = nil
		return nil, false
	}
	return resp.Screen, resp.Running
}

// ended judges the end of an agent its supervisor says is not running: done when its last words
// match the done pattern, limited when they are a usage limit and it did not succeed, else
// exited. Not ended when the worker still runs (starting, or its socket busy).
func (w *watcher) ended(ctx context.Context) (result, bool) {
	live := w.l.home.Live(ctx, w.it.w)
	if live.Running {
		return result{}, false
	}
	out := w.l.outcome(ctx, w.it.w, live.Outcome)
	words := w.lr.final()
	if w.done != nil && w.lr.matchesText(w.done, words) {
		return result{kind: resDone, out: out, exited: true}, true
	}
	if limited, at := w.prof.UsageLimit(words, time.Now()); limited && (out == nil || out.ExitCode == nil || *out.ExitCode != 0) {
		return result{kind: resLimited, out: out, resetAt: w.l.resetOrDefault(at)}, true
	}
	return result{kind: resExited, out: out}, true
}

// look reads the screen scr of the running agent: it notes a change, warns of a stuck screen,
// nudges at the context threshold and waits out a usage limit; it ends the watch on the done
// pattern (--check-done-continuous), compaction, the context's hard threshold, the hard budget
// or inactivity.
func (w *watcher) look(ctx context.Context, wake chan struct{}, scr []string) (result, bool) {
	l, st, it := w.l, w.st, w.it
	w.noteChange(ctx, scr)
	text := strings.Join(scr, "\n")
	for _, p := range stuckPatterns {
		if !w.warned[p.text] && strings.Contains(text, p.text) {
			w.warned[p.text] = true
			l.st.logEvent("WARN", "iteration %d: %s", it.n, p.msg)
		}
	}
	if w.done != nil && st.CheckDoneContinuous && w.lr.matches(w.done, w.lr.more()) {
		return result{kind: resDone}, true
	}
	if strings.Contains(text, fatalPattern) {
		return result{kind: resCompaction}, true
	}
	if st.MaxContext != nil {
		if pct, ok := contextUse(scr); ok {
			if pct >= *st.MaxContext+15 {
				return result{kind: resContext, pct: *st.MaxContext + 15}, true
			}
			if pct >= *st.MaxContext && !st.ContextNudgeSent {
				l.nudge(ctx, it, *st.MaxContext)
			}
		}
	}
	if limited, at := w.prof.UsageLimit(text, time.Now()); limited {
		l.holdForLimit(ctx, wake, it, w.ctl, l.resetOrDefault(at))
		w.lastChange = time.Now()
		return result{}, false
	}
	if now := time.Now(); now.Sub(w.lastCost) >= time.Second {
		w.lastCost = now
		if l.hardBudgetHit(it, w.prof) {
			return result{kind: resBudget}, true
		}
	}
	if w.timeout > 0 && time.Since(w.lastChange) >= w.timeout {
		return result{kind: resInactive, timeout: st.InactivityTimeout}, true
	}
	return result{}, false
}

// noteChange notes when the screen's last lines last changed (the inactivity timeout's clock),
// and saves it in the loop's state at most once a second: a chatty agent changes its screen
// every poll.
func (w *watcher) noteChange(ctx context.Context, scr []string) {
	h, now := hashTail(scr, 20), time.Now()
	if h == w.lastHash {
		return
	}
	w.lastHash, w.lastChange = h, now
	if now.Sub(w.lastSaved) >= time.Second {
		w.lastSaved = now
		w.l.st.update(ctx, func(s *State) error {
			s.LastScreenChange = strp(utcISO(now))
			return nil
		})
	}
}

// outcome waits (a little) for the supervisor's record of how the agent ended.
func (l *app) outcome(ctx context.Context, w *worker.Worker, out *worker.Outcome) *worker.Outcome {
	for deadline := time.Now().Add(10 * time.Second); out == nil && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		if x, err := l.home.Worker(w.Name); err == nil && x != nil && x.Started == w.Started {
			out, _ = x.Ended()
		}
	}
	return out
}

func (l *app) resetOrDefault(at time.Time) time.Time {
	if at.IsZero() || time.Until(at) <= 0 {
		return time.Now().Add(l.opts.LimitWait)
	}
	return at
}

// holdForLimit waits until a usage limit the running agent met resets, then asks it to go on,
// in the same iteration, no failure counted.
func (l *app) holdForLimit(ctx context.Context, wake chan struct{}, it *iteration, ctl *supervise.Control, until time.Time) {
	l.sayf("usage limit reached, waiting until %s", until.Local().Format("15:04:05"))
	st, _ := l.st.update(ctx, func(s *State) error {
		s.LimitedUntil, s.LimitReason = utcISO(until), LimitUsage
		return nil
	})
	if st != nil {
		l.event(hook.Limit, it.n, st.Status, LimitUsage)
	}
	l.st.logEvent("WARN", "iteration %d: usage limit reached, waiting until %s", it.n, until.Local().Format("2006-01-02T15:04:05"))
	l.sleep(ctx, wake, time.Until(until))
	l.st.update(ctx, func(s *State) error {
		s.LimitedUntil, s.LimitReason = "", ""
		return nil
	})
	if st, err := l.st.load(); err != nil || st.Status != StatusRunning && st.Status != StatusPaused || ctx.Err() != nil {
		return
	}
	if ctl != nil {
		ctl.Do(supervise.Request{Op: supervise.OpSend, Text: "continue"})
		ctl.Do(supervise.Request{Op: supervise.OpKeys, Keys: []string{"enter"}})
	}
	l.st.logEvent("WARN", "iteration %d: usage limit reset, resumed", it.n)
}

// nudge types the Python swarm's context nudge once per iteration.
func (l *app) nudge(ctx context.Context, it *iteration, pct int) {
	l.sayf("context nudge sent (%d%%)", pct)
	l.st.update(ctx, func(s *State) error {
		s.ContextNudgeSent = true
		l.st.logEvent("WARN", "iteration %d -- context nudge sent at %d%%", it.n, pct)
		return nil
	})
	if ctl, err := l.home.Control(it.w); err == nil {
		ctl.Do(supervise.Request{Op: supervise.OpSend, Text: fmt.Sprintf("You're at %d%% context. Commit WIP and /exit NOW.", pct)})
		ctl.Do(supervise.Request{Op: supervise.OpKeys, Keys: []string{"enter"}})
		ctl.Close()
	}
}

// contextRe finds a context figure: "Context: 45%", "45% context used", "context left until
// auto-compact: 12%" (12% left: 88% used), "Context low (8% remaining)". Any other N% on the
// screen (a progress bar, "100% tests passed") is not one (the Python swarm took the first N%
// of the last three lines).
var contextRe = regexp.MustCompile(`(?i)(?:\bcontext\b[^%\n]{0,40}?(\d{1,3})\s*%(\s*(?:left|remaining|free))?|(\d{1,3})\s*%\s*(?:of\s+)?(?:the\s+)?(?:context|ctx)\b(\s*(?:left|remaining|free))?|(\d{1,3})\s*%\s*(left|remaining|free|used)?[^%\n]{0,20}\bcontext\b)`)

// contextUse reads the context used, in percent, from the last three non-empty lines.
func contextUse(scr []string) (int, bool) {
	var last []string
	for i := len(scr) - 1; i >= 0 && len(last) < 3; i-- {
		if strings.TrimSpace(scr[i]) != "" {
			last = append(last, scr[i])
		}
	}
	for _, line := range last {
		m := contextRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		num, left := m[1], m[2]
		if num == "" {
			num, left = m[3], m[4]
		}
		if num == "" {
			num, left = m[5], m[6]
			if strings.EqualFold(left, "used") {
				left = ""
			}
		}
		lower := strings.ToLower(line)
		if left == "" && (strings.Contains(lower, "left") || strings.Contains(lower, "remaining")) {
			left = "left"
		}
		n, err := strconv.Atoi(num)
		if err != nil || n > 100 {
			continue
		}
		if strings.TrimSpace(left) != "" {
			n = 100 - n
		}
		return n, true
	}
	return 0, false
}

// hashTail identifies the last n lines of the screen, as the Python swarm hashed them.
func hashTail(scr []string, n int) uint64 {
	for len(scr) > 0 && strings.TrimSpace(scr[len(scr)-1]) == "" {
		scr = scr[:len(scr)-1]
	}
	if len(scr) > n {
		scr = scr[len(scr)-n:]
	}
	h := fnv.New64a()
	for _, l := range scr {
		io.WriteString(h, strings.TrimRight(l, " "))
		h.Write([]byte{'\n'})
	}
	return h.Sum64()
}

// typePrompt waits until the agent is ready (at most wait), types the prompt (without its final
// newlines: Enter submits it), waits until the screen shows it, notes where the agent's output
// log stands (the done pattern is looked for only after that), and presses Enter. It returns
// that offset and the screen as it was then.
func (l *app) typePrompt(ctx context.Context, st *State, w *worker.Worker, prompt string, wait time.Duration) (int64, string, error) {
	var p agent.Patterns
	if st.Worker != nil {
		if prof, err := l.home.Profile(st.Worker.Profile, st.Worker.Cmd); err == nil {
			p = prof.Screen
		}
	}
	l.home.WaitReady(ctx, w.Name, p, wait)
	ctl, err := l.home.Control(w)
	if err != nil {
		return 0, "", err
	}
	defer ctl.Close()
	if err := preflight(ctl, p); err != nil {
		return 0, "", err
	}
	text := strings.TrimRight(prompt, "\r\n")
	// Compared without white space: a long line wraps on the screen, at a space or not.
	needle := squeeze(echoNeedle(text))
	count := func() int {
		r, err := ctl.Do(supervise.Request{Op: supervise.OpScreen})
		if err != nil {
			return -1
		}
		return strings.Count(squeeze(strings.Join(r.Screen, "")), needle)
	}
	before := count()
	if _, err := ctl.Do(supervise.Request{Op: supervise.OpSend, Text: text}); err != nil {
		return 0, "", err
	}
	if needle != "" {
		deadline := time.Now().Add(2 * time.Second)
		for pause := time.Millisecond; count() <= before && time.Now().Before(deadline); pause = min(2*pause, 20*time.Millisecond) {
			time.Sleep(pause)
		}
	}
	// The supervisor writes its log out at most 20 ms after the screen has the output.
	time.Sleep(30 * time.Millisecond)
	offset := fileSize(l.home.LogPath(w.Name))
	var baseline string
	if r, err := ctl.Do(supervise.Request{Op: supervise.OpScreen}); err == nil {
		baseline = strings.Join(r.Screen, "\n")
	}
	if _, err := ctl.Do(supervise.Request{Op: supervise.OpKeys, Keys: []string{"enter"}}); err != nil {
		return 0, "", err
	}
	return offset, baseline, nil
}

// PreflightError is an agent that never became ready and shows a screen it is stuck on (a
// login, a theme picker): typing a prompt into it would be lost (the Python swarm's pre-flight
// check, done here once the ready wait is over rather than after a fixed 10 s).
// Spawn returns it once the worker is gone and the loop is failed.
type PreflightError struct{ msg string }

func (e *PreflightError) Error() string { return "pre-flight check failed — " + e.msg }

func preflight(ctl *supervise.Control, p agent.Patterns) error {
	r, err := ctl.Do(supervise.Request{Op: supervise.OpScreen})
	if err != nil {
		return nil // typing will say what is wrong
	}
	if m, err := p.Compile(); err == nil && m.Ready(r.Screen) {
		return nil
	}
	text := strings.Join(r.Screen, "\n")
	for _, sp := range stuckPatterns {
		if strings.Contains(text, sp.text) {
			return &PreflightError{sp.msg}
		}
	}
	return nil
}

// echoNeedle is what of text the screen shows once typed: its last non-empty line, at most its
// last 40 characters (a long line wraps).
func echoNeedle(text string) string {
	ls := strings.Split(strings.ReplaceAll(text, "\r", "\n"), "\n")
	for i := len(ls) - 1; i >= 0; i-- {
		s := strings.TrimSpace(ls[i])
		if s == "" {
			continue
		}
		if r := []rune(s); len(r) > 40 {
			s = strings.TrimSpace(string(r[len(r)-40:]))
		}
		return s
	}
	return ""
}

func fileSize(path string) int64 {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	return fi.Size()
}

// logReader reads a worker's output log from an offset, as text, line by line.
type logReader struct {
	path   string
	f      *os.File
	pos    int64
	carry  string // the last line, not ended yet
	prompt string // the prompt, normalized
}

// readLimit bounds one read of the log: a poll reads what came in the last 100 ms.
const readLimit = 4 << 20

func (r *logReader) open() bool {
	if r.f != nil {
		return true
	}
	fd, err := syscall.Open(r.path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), r.path)
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return false
	}
	r.f = f
	return true
}

func (r *logReader) close() {
	if r.f != nil {
		r.f.Close()
	}
}

// more returns the complete lines written since the last call (and the line in progress).
func (r *logReader) more() []string {
	if !r.open() {
		return nil
	}
	buf := make([]byte, 64<<10)
	var b []byte
	for len(b) < readLimit {
		n, err := r.f.ReadAt(buf, r.pos)
		b = append(b, buf[:n]...)
		r.pos += int64(n)
		if err != nil || n == 0 {
			break
		}
	}
	text := screen.Strip(strings.ReplaceAll(r.carry+string(b), "\r", "\n"))
	ls := strings.Split(text, "\n")
	r.carry = ls[len(ls)-1]
	return ls
}

// final returns what is left to read once the agent exited, as one text.
func (r *logReader) final() string {
	ls := r.more()
	r.carry = ""
	return strings.Join(ls, "\n")
}

// matches reports whether re matches one of the lines in the agent's own words (not in a
// piece of the prompt shown again).
func (r *logReader) matches(re *regexp.Regexp, ls []string) bool {
	for _, l := range ls {
		if agentSaid(re, l, r.prompt) {
			return true
		}
	}
	return false
}

func (r *logReader) matchesText(re *regexp.Regexp, text string) bool {
	return r.matches(re, strings.Split(text, "\n"))
}

// echoContext is how much of the prompt (in non-space characters) around a match makes it an
// echo: the prompt's own words leading to the marker, not the marker alone.
const echoContext = 8

// echoScan bounds the part of a line looked at for an echo.
const echoScan = 8 << 10

// agentSaid reports whether re matches line somewhere the agent said it rather than echoed it
// from prompt (normalized). A match is an echo when the line, from some point at or before the
// match to its end (box edges and spaces trimmed), is a piece of the prompt that holds at least
// echoContext non-space characters besides the match: the prompt shown again behind any prefix
// ("> ", "User: ", "[you] ", a box edge). The marker alone on a line, or the prompt's words
// followed by the agent's own, count as said.
func agentSaid(re *regexp.Regexp, line, prompt string) bool {
	locs := re.FindAllStringIndex(line, -1)
	if locs == nil {
		return false
	}
	end := strings.TrimRight(line, "│|┃║ \t")
	for _, loc := range locs {
		s, e := loc[0], loc[1]
		if e > len(end) || !echoed(end, s, e, prompt) {
			return true
		}
	}
	return false
}

// echoed reports whether line[k:] is in prompt for some k <= s with enough context besides
// line[s:e]. A tail that is not in the prompt is part of every longer one: the scan stops there.
func echoed(line string, s, e int, prompt string) bool {
	match := nonSpace(line[s:e])
	for k := s; k >= max(0, s-echoScan); k-- {
		if !utf8.RuneStart(line[k]) {
			continue
		}
		t := normalize(line[k:])
		if !strings.Contains(prompt, t) {
			return false
		}
		if nonSpace(t)-match >= echoContext {
			return true
		}
	}
	return false
}

func nonSpace(s string) int {
	n := 0
	for _, r := range s {
		if !unicode.IsSpace(r) {
			n++
		}
	}
	return n
}

// squeeze removes all white space.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// normalize collapses runs of white space into one space.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }
