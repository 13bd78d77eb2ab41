// Package ui is `swarm top`'s full-screen terminal UI over package top's model, on bubbletea
// and lipgloss (the Go ecosystem's terminal UI libraries; bubbletea restores the terminal on
// quit, on SIGINT and SIGTERM, and on a panic, and runs external programs, tmux attach and the
// pager, with the terminal handed over and taken back).
//
// It reads every row at once when a state file changes (top.Model.Watch, inotify), and on a
// timer (Options.Interval, 1 s) reads again only the screens of the live agents (their
// activity and last line) and redraws (ages, idle times); a full refresh after ten intervals
// without one catches what no file tells (a supervisor killed with SIGKILL). The
// selected agent's screen view asks its supervisor for the screen four times a second while it
// is shown. Every action asks for a confirmation before anything that stops or ends an agent.
// With --hosts (top.Hosts) each host's rows are merged in as its poll answers, and the status
// line says each host's state; an action on another host's agent is carried out there, by the
// host's swarm over the poll's connection (top.ActVerb), in the background: a host that does
// not answer fails the action with one line naming it, and never holds the view.
//
// Keys (the footer shows them; ? the whole list):
//
//	↑/↓ k/j, PgUp/PgDn, g/G   select
//	enter, v                   the selected agent's screen, live (esc back)
//	s                          send a line (typed at the prompt, Enter sends it)
//	i                          interrupt (Ctrl-C), after a confirmation
//	d                          end of input (Ctrl-D), after a confirmation
//	x                          kill, after a confirmation
//	p, r, S                    pause, resume, stop a loop (stop after a confirmation)
//	a                          attach to its tmux pane (tmux attach; detach comes back)
//	l                          its log in $PAGER (less)
//	D                          its changes against its base: a diff pane (files, then the
//	                           diff; up/down PgUp/PgDn g/G scroll, esc back)
//	!                          a shell in its worktree: a tmux split where top runs in tmux,
//	                           else the message says where (cd DIR); a host's agent's: ssh -t
//	                           into its worktree there
//	n                          a new worker like it: NAME PROMPT at the prompt (swarm spawn's
//	                           checks; the prompt typed once the agent is ready)
//	/                          filter by text (Enter keeps it, Esc clears it)
//	f, t, o                    next kind filter, next status filter (live, ended), next order
//	q, Ctrl-C                  quit
package ui

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/agentfleet/fleet/internal/top"
	"github.com/charmbracelet/x/ansi"
)

// Options are how the UI starts.
type Options struct {
	Filter   top.Filter
	Sort     string
	Interval time.Duration
	In       *os.File
	Out      io.Writer
	NoColor  bool
	Environ  []string
	// Bell rings the terminal's bell once when an agent starts waiting for input (one that
	// waits already when the UI starts does not ring it).
	Bell bool
}

// Run shows the UI until the person quits (q, Ctrl-C), or SIGTERM, or ctx ends.
func Run(ctx context.Context, m *top.Model, o Options) error {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u := newUI(ctx, m, o)
	if ch, rearm, err := m.Watch(ctx); err == nil {
		u.changes, u.rearm = ch, rearm
	}
	// 20 frames a second at most (bubbletea's default is 60): the table changes once a second
	// and typing shows within 50 ms; each frame's timer costs CPU while idle.
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(o.In), tea.WithOutput(o.Out), tea.WithEnvironment(o.Environ),
		tea.WithFPS(20)}
	_, err := tea.NewProgram(u, opts...).Run()
	if err == tea.ErrProgramKilled && ctx.Err() != nil {
		return nil
	}
	return err
}

type mode int

const (
	modeList mode = iota
	modeScreen
	modeSend
	modeFilter
	modeConfirm
	modeHelp
	modeDiff
	modeNew
)

type ui struct {
	ctx     context.Context
	m       *top.Model
	o       Options
	changes <-chan struct{}
	rearm   func()

	all, rows           []*top.Row
	selected            string // the selected row's key
	cursor              int
	top                 int // the first row shown
	w, h                int
	mode                mode
	input               string
	confirm             string // what is asked
	act                 func() tea.Msg
	message             string
	screen              []string
	refreshing, pending bool
	answered            bool      // a screen answered while a refresh or a look ran
	lastFull            time.Time // the last full refresh asked for
	st                  styles
	// diff is the selected agent's changes (the diff pane), diffTop its first line shown.
	diff    *top.Diff
	diffTop int
	// waiting are the keys of the rows whose agents wait for input, as last shown; nil
	// before the first rows.
	waiting map[string]bool
}

type styles struct{ header, sel, bad, good, warn, dim lipgloss.Style }

func newUI(ctx context.Context, m *top.Model, o Options) *ui {
	u := &ui{ctx: ctx, m: m, o: o, w: 80, h: 24}
	plain := lipgloss.NewStyle()
	u.st = styles{header: plain.Bold(true), sel: plain.Reverse(true), bad: plain, good: plain, warn: plain, dim: plain}
	if !o.NoColor {
		u.st.bad = plain.Foreground(lipgloss.Color("1"))
		u.st.good = plain.Foreground(lipgloss.Color("2"))
		u.st.warn = plain.Foreground(lipgloss.Color("3"))
		u.st.dim = plain.Foreground(lipgloss.Color("8"))
	}
	return u
}

type (
	rowsMsg struct {
		rows []*top.Row
		err  error
	}
	tickMsg   struct{}
	lookMsg   struct{ rows []*top.Row }
	changeMsg struct{}
	answerMsg struct{}
	hostMsg   struct{}
	screenMsg struct {
		key   string
		lines []string
		err   error
	}
	doneMsg struct{ text string }
	diffMsg struct {
		key  string
		diff *top.Diff
		err  error
	}
	screenTk struct{}
)

func (u *ui) Init() tea.Cmd {
	return tea.Batch(u.refresh(), u.tick(), u.listen(), u.answers(), u.hostAnswers())
}

// hostAnswers waits for a host's poll to end (swarm top --hosts; nothing without hosts).
func (u *ui) hostAnswers() tea.Cmd {
	ch := u.m.HostAnswers()
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case <-ch:
			return hostMsg{}
		case <-u.ctx.Done():
			return nil
		}
	}
}

// answers waits for a screen read to answer (the model tells at most one pending).
func (u *ui) answers() tea.Cmd {
	ch := u.m.Answers()
	return func() tea.Msg {
		select {
		case <-ch:
			return answerMsg{}
		case <-u.ctx.Done():
			return nil
		}
	}
}

func (u *ui) tick() tea.Cmd {
	return tea.Tick(u.o.Interval, func(time.Time) tea.Msg { return tickMsg{} })
}

func (u *ui) listen() tea.Cmd {
	if u.changes == nil {
		return nil
	}
	return func() tea.Msg {
		if _, ok := <-u.changes; !ok {
			return nil
		}
		return changeMsg{}
	}
}

// refresh reads the rows in the background; a refresh asked for while one runs runs after it.
func (u *ui) refresh() tea.Cmd {
	if u.refreshing {
		u.pending = true
		return nil
	}
	u.refreshing = true
	u.lastFull = time.Now()
	rearm := u.rearm
	return func() tea.Msg {
		// The directories made since the last refresh are watched first: a change after this
		// is told, one before it is read now.
		if rearm != nil {
			rearm()
		}
		// The rows at once: a screen that is slow to answer is merged in when it answers.
		rows, err := u.m.Snapshot(u.ctx)
		return rowsMsg{rows, err}
	}
}

// bell notes which agents wait for input now and, with Options.Bell, rings the terminal's
// bell once when one (or more) started since the last rows: the person may be looking at
// another window.
func (u *ui) bell() tea.Cmd {
	now := map[string]bool{}
	started := false
	for _, r := range u.all {
		if r.Live && !r.WaitingInput.IsZero() {
			now[r.Key()] = true
			started = started || u.waiting != nil && !u.waiting[r.Key()]
		}
	}
	u.waiting = now
	if !started || !u.o.Bell {
		return nil
	}
	return tea.Raw("\a")
}

// merged is rows with the screens that answered while they were read.
func (u *ui) merged(rows []*top.Row) []*top.Row {
	if !u.answered {
		return rows
	}
	u.answered = false
	return u.m.Merge(rows)
}

// fullEvery is how many intervals pass at most between two full refreshes.
const fullEvery = 10

// tock is the timer's work: a full refresh when the last is fullEvery intervals old, else the
// live rows' screens (nothing when none is live, or when a refresh runs).
func (u *ui) tock() tea.Cmd {
	if time.Since(u.lastFull) >= fullEvery*u.o.Interval {
		return u.refresh()
	}
	if u.refreshing || !slices.ContainsFunc(u.all, func(r *top.Row) bool { return r.Live }) {
		return nil
	}
	u.refreshing = true
	rows := u.all
	return func() tea.Msg { return lookMsg{u.m.Look(u.ctx, rows)} }
}

func (u *ui) screenCmd() tea.Cmd {
	r := u.current()
	if r == nil {
		return nil
	}
	key := r.Key()
	return func() tea.Msg {
		lines, err := u.m.Screen(u.ctx, r)
		return screenMsg{key, lines, err}
	}
}

func (u *ui) current() *top.Row {
	if u.cursor >= 0 && u.cursor < len(u.rows) {
		return u.rows[u.cursor]
	}
	return nil
}

func (u *ui) apply() {
	u.rows = u.o.Filter.Apply(u.all)
	top.Sort(u.rows, u.o.Sort)
	u.cursor = 0
	for i, r := range u.rows {
		if r.Key() == u.selected {
			u.cursor = i
		}
	}
	u.clamp()
}

func (u *ui) clamp() {
	u.cursor = max(0, min(u.cursor, len(u.rows)-1))
	if r := u.current(); r != nil {
		u.selected = r.Key()
	}
	n := u.listHeight()
	if u.cursor < u.top {
		u.top = u.cursor
	}
	if u.cursor >= u.top+n {
		u.top = u.cursor - n + 1
	}
	u.top = max(0, min(u.top, len(u.rows)-n))
}

// listHeight: the rows that fit between the header line and the two footer lines.
func (u *ui) listHeight() int { return max(1, u.h-3) }

func (u *ui) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		u.w, u.h = msg.Width, msg.Height
		u.clamp()
	case rowsMsg:
		u.refreshing = false
		if msg.err != nil {
			u.message = "error: " + msg.err.Error()
		}
		u.all = u.merged(msg.rows)
		u.apply()
		bell := u.bell()
		if u.pending {
			u.pending = false
			return u, tea.Batch(bell, u.refresh())
		}
		return u, bell
	case lookMsg:
		u.refreshing = false
		u.all = u.merged(msg.rows)
		u.apply()
		bell := u.bell()
		if u.pending {
			u.pending = false
			return u, tea.Batch(bell, u.refresh())
		}
		return u, bell
	case answerMsg:
		// A screen answered: its row's LAST and ACTIVITY now, the other rows as they were.
		if u.refreshing {
			u.answered = true
		} else {
			u.all = u.m.Merge(u.all)
			u.apply()
		}
		return u, u.answers()
	case hostMsg:
		// A host answered (or did not): its rows now, this machine's as they were. A refresh
		// running adds the hosts' rows as they are when it ends.
		u.all = u.m.MergeHosts(u.all)
		u.apply()
		return u, tea.Batch(u.bell(), u.hostAnswers())
	case tickMsg:
		return u, tea.Batch(u.tock(), u.tick())
	case changeMsg:
		return u, tea.Batch(u.refresh(), u.listen())
	case screenTk:
		if u.mode == modeScreen || u.mode == modeSend && u.screen != nil {
			return u, tea.Batch(u.screenCmd(), tea.Tick(250*time.Millisecond, func(time.Time) tea.Msg { return screenTk{} }))
		}
	case screenMsg:
		if r := u.current(); r != nil && r.Key() == msg.key {
			u.screen = msg.lines
			if msg.err != nil && u.screen == nil {
				u.screen = []string{"(no screen: " + msg.err.Error() + ")"}
			}
		}
	case doneMsg:
		u.message = msg.text
		return u, u.refresh()
	case diffMsg:
		if r := u.current(); r != nil && r.Key() == msg.key && u.mode == modeDiff {
			if msg.err != nil {
				u.mode, u.message = modeList, "diff "+r.Name+": "+msg.err.Error()
				return u, nil
			}
			u.diff, u.diffTop = msg.diff, 0
		}
	case tea.KeyPressMsg:
		return u.key(msg)
	}
	return u, nil
}

// key dispatches key k by mode: the diff view, a line being typed, a question, the help, and
// the list (or screen view), each reading its keys in a function of its own.
func (u *ui) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	s := k.String()
	switch u.mode {
	case modeDiff:
		return u, u.diffKey(s)
	case modeSend, modeFilter, modeNew:
		return u, u.inputKey(k)
	case modeConfirm:
		return u, u.confirmKey(s)
	case modeHelp:
		u.mode = modeList
		return u, nil
	}
	return u, u.listKey(s)
}

// inputKey edits the line typed to send (s), filter by (/) or start a new worker with (n);
// enter acts on it, esc gives it up. The filter applies as it is typed.
func (u *ui) inputKey(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "enter":
		text := u.input
		if u.mode == modeFilter {
			u.mode = modeList
			return nil
		}
		if u.mode == modeNew {
			u.mode = u.back()
			// Its agent is given up to newReadyWait to be ready for the prompt.
			u.message = "starting a new worker: " + text
			return u.spawn(text)
		}
		u.mode = u.back()
		return u.do("sent", func(r *top.Row) error { return u.m.Send(u.ctx, r, text) })
	case "esc":
		if u.mode == modeFilter {
			u.o.Filter.Text = ""
			u.apply()
		}
		u.mode = u.back()
	case "backspace":
		if u.input != "" {
			rs := []rune(u.input)
			u.input = string(rs[:len(rs)-1])
		}
	case "ctrl+c":
		return tea.Quit
	default:
		if k.Text != "" {
			u.input += k.Text
		}
	}
	if u.mode == modeFilter {
		u.o.Filter.Text = u.input
		u.apply()
	}
	return nil
}

// confirmKey answers the question asked before an action: y or Y does it, any other key not.
func (u *ui) confirmKey(s string) tea.Cmd {
	u.mode = u.back()
	if s == "y" || s == "Y" {
		u.message = u.confirm + ": ..."
		return u.act
	}
	u.message = "cancelled"
	return nil
}

// listKey reads a key of the list or the screen view: the keys that act on the selected row
// (rowKey), else those that move, filter, sort, or leave.
func (u *ui) listKey(s string) tea.Cmd {
	if cmd, done := u.rowKey(s); done {
		return cmd
	}
	switch s {
	case "q", "ctrl+c":
		if u.mode == modeScreen && s == "q" {
			u.mode, u.screen = modeList, nil
			return nil
		}
		return tea.Quit
	case "esc":
		// The screen view is left for good: a prompt opened from the list goes back to it.
		u.mode, u.screen = modeList, nil
	case "up", "k":
		u.cursor--
	case "down", "j":
		u.cursor++
	case "pgup":
		u.cursor -= u.listHeight()
	case "pgdown":
		u.cursor += u.listHeight()
	case "g", "home":
		u.cursor = 0
	case "G", "end":
		u.cursor = len(u.rows) - 1
	case "/":
		u.mode, u.input = modeFilter, u.o.Filter.Text
	case "f":
		i := slices.Index(top.Kinds, u.o.Filter.Kind)
		if i+1 < len(top.Kinds) {
			u.o.Filter.Kind = top.Kinds[i+1]
		} else {
			u.o.Filter.Kind = ""
		}
		u.apply()
	case "t":
		next := map[string]string{"": "live", "live": "ended", "ended": ""}
		u.o.Filter.Status = next[u.o.Filter.Status]
		u.apply()
	case "o":
		i := slices.Index(top.SortKeys, u.o.Sort)
		u.o.Sort = top.SortKeys[(i+1)%len(top.SortKeys)]
		u.apply()
	case "?":
		u.mode = modeHelp
	}
	u.clamp()
	if u.mode == modeScreen {
		return u.screenCmd()
	}
	return nil
}

// rowKey acts on the selected row for the keys that do; done says the key was one and its
// command is all there is to do (false: the list is clamped and redrawn as for any key).
func (u *ui) rowKey(s string) (cmd tea.Cmd, done bool) {
	r := u.current()
	switch s {
	case "i":
		return u.ask("interrupt", func(r *top.Row) error { return u.m.Key(u.ctx, r, "interrupt") }), true
	case "d":
		return u.ask("end of input", func(r *top.Row) error { return u.m.Key(u.ctx, r, "eof") }), true
	case "x":
		return u.ask("kill", func(r *top.Row) error { return u.m.Kill(u.ctx, r) }), true
	case "S":
		return u.ask("stop loop", func(r *top.Row) error { return u.m.Stop(u.ctx, r) }), true
	case "p":
		return u.do("paused", func(r *top.Row) error { return u.m.Pause(u.ctx, r) }), true
	case "r":
		return u.do("resumed", func(r *top.Row) error { return u.m.Resume(u.ctx, r) }), true
	}
	if r == nil {
		return nil, false
	}
	switch s {
	case "enter", "v":
		u.mode, u.screen = modeScreen, nil
		return tea.Batch(u.screenCmd(), tea.Tick(250*time.Millisecond, func(time.Time) tea.Msg { return screenTk{} })), true
	case "s":
		u.mode, u.input = modeSend, ""
	case "n":
		u.mode, u.input = modeNew, ""
	case "D":
		u.mode, u.diff, u.diffTop, u.screen = modeDiff, nil, 0, nil
		key := r.Key()
		return func() tea.Msg {
			d, err := u.m.Diff(u.ctx, r)
			return diffMsg{key, d, err}
		}, true
	case "!":
		return u.shell(r), true
	case "a":
		return u.attach(r), true
	case "l":
		if r.Log != "" {
			return u.pager(r), true
		}
	}
	return nil, false
}

// attach runs the command that attaches to row r's agent (Model.AttachArgs) in the terminal,
// top suspended until it ends.
func (u *ui) attach(r *top.Row) tea.Cmd {
	argv, err := u.m.AttachArgs(r)
	if err != nil {
		u.message = err.Error()
		return nil
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = withoutTMUX(u.o.Environ)
	return tea.ExecProcess(c, func(err error) tea.Msg { return doneMsg{text: result("attach", r.Name, err)} })
}

// pager shows row r's log in $PAGER (less when unset), top suspended until it ends.
func (u *ui) pager(r *top.Row) tea.Cmd {
	pager := lookup(u.o.Environ, "PAGER")
	if pager == "" {
		pager = "less"
	}
	argv := strings.Fields(pager)
	c := exec.Command(argv[0], append(argv[1:], r.Log)...)
	c.Env = u.o.Environ
	return tea.ExecProcess(c, func(err error) tea.Msg { return doneMsg{text: result("log", r.Name, err)} })
}

// newReadyWait is how long a worker started from the view (n) is given to show its ready
// pattern before its prompt is typed, as spawn --ready-wait.
const newReadyWait = 30 * time.Second

// spawn starts a new worker like the selected one (n): line is its name, then its prompt.
func (u *ui) spawn(line string) tea.Cmd {
	name, prompt, _ := strings.Cut(strings.TrimSpace(line), " ")
	r := u.current()
	if r == nil {
		return nil
	}
	return func() tea.Msg {
		_, err := u.m.SpawnLike(u.ctx, r, name, strings.TrimSpace(prompt), newReadyWait)
		if err != nil {
			return doneMsg{text: fmt.Sprintf("new worker like %s: %v", r.Name, err)}
		}
		return doneMsg{text: fmt.Sprintf("started %s (like %s)", name, r.Name)}
	}
}

// shell opens a shell in the selected agent's worktree (!): a pane split from top's own where
// top runs inside tmux ($TMUX), else the message says how. A host's agent's shell is ssh -t
// into its worktree there (hostShell).
func (u *ui) shell(r *top.Row) tea.Cmd {
	if r.Host != "" {
		return u.hostShell(r)
	}
	dir, err := u.m.WorkDir(r)
	if err != nil {
		u.message = "shell " + r.Name + ": " + err.Error()
		return nil
	}
	if lookup(u.o.Environ, "TMUX") == "" {
		u.message = fmt.Sprintf("not inside tmux: open a shell there with: cd %s", shellQuote(dir))
		return nil
	}
	tc := &tmux.Client{Socket: tmux.SocketOfEnv(lookup(u.o.Environ, "TMUX"))}
	pane := lookup(u.o.Environ, "TMUX_PANE")
	return func() tea.Msg {
		return doneMsg{text: result("shell in "+dir, r.Name, tc.SplitFrom(u.ctx, pane, dir))}
	}
}

// hostShell opens ssh -t into a host's agent's worktree (its directory asked of the host
// first, in the background: a host that does not answer holds no key) in a split of top's
// pane, or says the command line where top is not inside tmux.
func (u *ui) hostShell(r *top.Row) tea.Cmd {
	inTmux := lookup(u.o.Environ, "TMUX") != ""
	tc := &tmux.Client{Socket: tmux.SocketOfEnv(lookup(u.o.Environ, "TMUX"))}
	pane := lookup(u.o.Environ, "TMUX_PANE")
	u.message = "shell " + r.Name + ": asking host " + r.Host + "…"
	return func() tea.Msg {
		argv, err := u.m.ShellArgs(u.ctx, r)
		switch {
		case err != nil:
			return doneMsg{text: "shell " + r.Name + ": " + err.Error()}
		case !inTmux:
			quoted := make([]string, len(argv))
			for i, a := range argv {
				quoted[i] = shellQuote(a)
			}
			return doneMsg{text: "not inside tmux: open a shell there with: " + strings.Join(quoted, " ")}
		}
		return doneMsg{text: result("shell on "+r.Host, r.Name, tc.SplitRun(u.ctx, pane, "", argv...))}
	}
}

// shellQuote quotes a path for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// diffKey scrolls the diff pane; esc or q goes back to the list.
func (u *ui) diffKey(s string) tea.Cmd {
	page := max(1, u.h-3)
	switch s {
	case "esc", "q":
		u.mode, u.diff = modeList, nil
	case "ctrl+c":
		return tea.Quit
	case "up", "k":
		u.diffTop--
	case "down", "j":
		u.diffTop++
	case "pgup", "b":
		u.diffTop -= page
	case "pgdown", "space", " ":
		u.diffTop += page
	case "g", "home":
		u.diffTop = 0
	case "G", "end":
		u.diffTop = len(u.diffLines())
	}
	u.diffTop = max(0, min(u.diffTop, len(u.diffLines())-page))
	return nil
}

// diffLines is the diff pane's text: the files, a blank line, the diff.
func (u *ui) diffLines() []string {
	if u.diff == nil {
		return nil
	}
	lines := []string{fmt.Sprintf("%d files changed:", len(u.diff.Files))}
	for _, f := range u.diff.Files {
		lines = append(lines, "  "+f)
	}
	lines = append(lines, "")
	lines = append(lines, u.diff.Lines...)
	if u.diff.Truncated {
		lines = append(lines, "(cut: the diff is longer than top reads; git diff in "+u.diff.Dir+" shows it all)")
	}
	return lines
}

// renderDiff is the diff pane: a title, the lines that fit from diffTop.
func (u *ui) renderDiff(b *strings.Builder) {
	r := u.current()
	title := "diff: reading…"
	if r != nil && u.diff != nil {
		title = fmt.Sprintf("diff %s against %.12s  (%d files; %d/%d)", r.Name, u.diff.Base, len(u.diff.Files),
			min(u.diffTop+1, len(u.diffLines())), len(u.diffLines()))
	}
	b.WriteString(u.st.header.Render(cut(title, u.w)) + "\n")
	n := u.h - 3
	lines := u.diffLines()
	end := min(len(lines), u.diffTop+n)
	shown := 0
	for _, l := range lines[min(u.diffTop, end):end] {
		st := lipgloss.NewStyle()
		switch {
		case strings.HasPrefix(l, "+"):
			st = u.st.good
		case strings.HasPrefix(l, "-"):
			st = u.st.bad
		case strings.HasPrefix(l, "@@"):
			st = u.st.dim
		}
		b.WriteString(st.Render(cut(l, u.w)) + "\n")
		shown++
	}
	for ; shown < n; shown++ {
		b.WriteString("\n")
	}
}

// back is the mode a prompt returns to: the screen view when one is open.
func (u *ui) back() mode {
	if u.screen != nil {
		return modeScreen
	}
	return modeList
}

func (u *ui) ask(what string, fn func(*top.Row) error) tea.Cmd {
	r := u.current()
	if r == nil {
		return nil
	}
	if u.mode != modeScreen {
		u.screen = nil
	}
	u.confirm = fmt.Sprintf("%s %s %s", what, r.Kind, r.Name)
	u.act = u.do(what, fn)
	u.mode = modeConfirm
	return nil
}

func (u *ui) do(what string, fn func(*top.Row) error) tea.Cmd {
	r := u.current()
	if r == nil {
		return nil
	}
	return func() tea.Msg { return doneMsg{text: result(what, r.Name, fn(r))} }
}

func result(what, name string, err error) string {
	if err != nil {
		return fmt.Sprintf("%s %s: %v", what, name, err)
	}
	return fmt.Sprintf("%s: %s", name, what)
}

func lookup(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// withoutTMUX: tmux refuses to attach from inside a tmux pane while $TMUX says so ("sessions
// should be nested with care"); top's own pane is left for the agent's while attached.
func withoutTMUX(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "TMUX=") })
}

func (u *ui) View() tea.View {
	v := tea.NewView(u.render())
	v.AltScreen = true
	return v
}

func (u *ui) render() string {
	var b strings.Builder
	now := time.Now()
	if u.mode == modeHelp {
		b.WriteString(u.st.header.Render("swarm top: keys") + "\n")
		b.WriteString(help)
		return b.String()
	}
	if u.mode == modeDiff {
		u.renderDiff(&b)
	} else if u.mode == modeScreen || (u.screen != nil && (u.mode == modeSend || u.mode == modeConfirm || u.mode == modeNew)) {
		r := u.current()
		title := "(gone)"
		if r != nil {
			title = fmt.Sprintf("%s %s  %s  %s", r.Kind, r.Name, r.Status, r.ActivityWords(now))
		}
		b.WriteString(u.st.header.Render(cut(title, u.w)) + "\n")
		lines := u.screen
		n := u.h - 3
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		for _, l := range lines {
			b.WriteString(cut(l, u.w) + "\n")
		}
		for i := len(lines); i < n; i++ {
			b.WriteString("\n")
		}
	} else {
		b.WriteString(u.table(now))
	}
	b.WriteString(cut(u.status(), u.w) + "\n")
	b.WriteString(u.st.dim.Render(cut(u.footer(), u.w)))
	return b.String()
}

const help = `  up/down k/j PgUp/PgDn g/G  select an agent
  enter v   its screen, live (esc or q: back to the list)
  s         send a line (Enter sends it, Esc gives up)
  i         interrupt (Ctrl-C)          d  end of input (Ctrl-D)
  x         kill                        S  stop a loop
  p         pause a loop                r  resume a loop
  a         attach to its tmux pane     l  its log in $PAGER
  D         its changes against its base (a diff pane: files, then the diff; esc back)
  !         a shell in its worktree (a tmux split where top runs in tmux)
  n         a new worker like it: NAME PROMPT (its prompt typed once it is ready)
  /         filter by text              f  next kind   t  live/ended
  o         next order                  q  quit
  Each of i, d, x and S asks first (y to go on).
  On another host's agent (--hosts) each runs there; ! opens ssh -t into it.
  any key: back`

func (u *ui) status() string {
	switch u.mode {
	case modeSend:
		return "send> " + u.input + "_"
	case modeNew:
		return "new worker like the selected, NAME PROMPT> " + u.input + "_"
	case modeFilter:
		return "filter> " + u.input + "_"
	case modeConfirm:
		return u.confirm + "? (y/N)"
	}
	f := u.o.Filter
	var parts []string
	parts = append(parts, fmt.Sprintf("%d agents", len(u.rows)))
	if f.Kind != "" {
		parts = append(parts, "kind="+string(f.Kind))
	}
	if f.Status != "" {
		parts = append(parts, "status="+f.Status)
	}
	if f.Tag != "" {
		parts = append(parts, "tag="+f.Tag)
	}
	if f.Text != "" {
		parts = append(parts, "/"+f.Text)
	}
	parts = append(parts, "sort="+u.o.Sort)
	for _, h := range u.m.Hosts() {
		parts = append(parts, h.Words(time.Now()))
	}
	s := strings.Join(parts, "  ")
	if u.message != "" {
		s += "  | " + u.message
	}
	return s
}

func (u *ui) footer() string {
	switch u.mode {
	case modeScreen:
		return "esc back  s send  i/d int/eof  x kill  D diff  ! shell  n new  a attach  l log"
	case modeDiff:
		return "esc back  up/down PgUp/PgDn g/G scroll"
	}
	// 80 columns: the rest of the keys (p/r/S, a, l, / f t o) are in the help.
	return "enter screen  s send  i/d int/eof  x kill  D diff  ! shell  n new  ? keys  q"
}

// table renders the rows that fit, columns cut to the width: LAST takes what is left.
func (u *ui) table(now time.Time) string {
	hosts := u.m.Hosts() != nil
	cells := [][]string{top.Columns}
	if hosts {
		cells[0] = top.HostColumns
	}
	n := u.listHeight()
	end := min(len(u.rows), u.top+n)
	for _, r := range u.rows[u.top:end] {
		if hosts {
			cells = append(cells, r.HostCells(now))
		} else {
			cells = append(cells, r.Cells(now))
		}
	}
	last := len(cells[0]) - 1
	widths := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, c := range row[:last] {
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	widths[1] = min(widths[1], 24)
	used := 0
	for _, w := range widths[:last] {
		used += w + 1
	}
	widths[last] = max(0, u.w-used)
	var b strings.Builder
	for i, row := range cells {
		var line strings.Builder
		for j, c := range row {
			c = cut(c, widths[j])
			line.WriteString(c)
			if j < last {
				line.WriteString(strings.Repeat(" ", widths[j]-ansi.StringWidth(c)+1))
			}
		}
		l := cut(line.String(), u.w)
		switch {
		case i == 0:
			l = u.st.header.Render(l)
		case u.top+i-1 == u.cursor:
			l = u.st.sel.Render(l + strings.Repeat(" ", max(0, u.w-ansi.StringWidth(l))))
		default:
			l = u.colour(u.rows[u.top+i-1], l)
		}
		b.WriteString(l + "\n")
	}
	for i := len(cells) - 1; i < n; i++ {
		b.WriteString("\n")
	}
	return b.String()
}

func (u *ui) colour(r *top.Row, l string) string {
	switch {
	case r.Live && (r.Activity == top.ActivityWaiting || !r.WaitingInput.IsZero()):
		return u.st.warn.Render(l)
	case r.Live:
		return u.st.good.Render(l)
	case r.ExitCode != nil && *r.ExitCode == 0:
		return l
	case r.ExitCode != nil || r.Status == "failed":
		return u.st.bad.Render(l)
	}
	return l
}

// cut truncates s to w columns (the agent's text is plain: screen lines come without styles).
func cut(s string, w int) string {
	if w <= 0 {
		return ""
	}
	return ansi.Truncate(s, w, "…")
}
