package top

import (
	"cmp"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
)

// Kind is what an agent is.
type Kind string

// The kinds of rows.
const (
	KindDispatch Kind = "dispatch" // a bead dispatch started
	KindWorker   Kind = "worker"   // a swarm worker
	KindLoop     Kind = "loop"     // a swarm ralph loop or an AIWG loop
	KindTask     Kind = "task"     // a ralph queue task
)

// Kinds are the kinds in the order rows are sorted by.
var Kinds = []Kind{KindDispatch, KindWorker, KindLoop, KindTask}

// Activities, as a swarm worker's supervisor records them.
const (
	ActivityBusy    = worker.ActivityBusy
	ActivityWaiting = worker.ActivityWaiting
	ActivityIdle    = worker.ActivityIdle
)

// Row is one agent.
type Row struct {
	// Host is the host of a hosts file (swarm top --hosts) the agent runs on; "" for this
	// machine.
	Host string `json:"host"`
	// HostOffline: the host did not answer its last poll; the row is what it said last.
	HostOffline bool   `json:"host_offline,omitempty"`
	Kind        Kind   `json:"kind"`
	Name        string `json:"name"`
	// Source says where it was found: "swarm" or "aiwg" for a loop, the plan for a task.
	Source string `json:"source,omitempty"`
	Status string `json:"status"`
	// Live: its agent (or a loop's current iteration) runs under a live supervisor.
	Live bool `json:"live"`
	// Activity is busy, waiting or idle while Live ("" otherwise); ActivitySince when it
	// became so.
	Activity      string    `json:"activity,omitempty"`
	ActivitySince time.Time `json:"activity_since,omitzero"`
	// WaitingInput is since when the agent waits for input, as its supervisor decided it
	// (docs/swarm.md, "Waiting for input"): a worker's as it recorded it in state.json, a
	// bead's, an AIWG loop's or a task's as its control socket last answered; zero when it
	// does not, or is not live.
	WaitingInput time.Time `json:"waiting_input,omitzero"`
	Started      time.Time `json:"started,omitzero"`
	// Iteration and MaxIterations for a loop; Attempt for a bead or a task.
	Iteration     int      `json:"iteration,omitempty"`
	MaxIterations int      `json:"max_iterations,omitempty"`
	Attempt       int      `json:"attempt,omitempty"`
	Cost          *float64 `json:"cost_usd"`
	ExitCode      *int64   `json:"exit_code"`
	Reason        string   `json:"reason,omitempty"`
	LastLine      string   `json:"last_line,omitempty"`
	// ScreenError says why the supervisor's screen did not answer ("not answering" past the
	// model's Timeout): LastLine and an activity judged from the screen are then what it said
	// last.
	ScreenError string   `json:"screen_error,omitempty"`
	Tags        []string `json:"tags,omitempty"`

	// Where it lives, for the actions: the bead of a dispatch, an AIWG loop's iteration or a
	// task, and its state directory; the control socket of its supervisor; its tmux pane
	// (attach); its log.
	Bead     string `json:"bead,omitempty"`
	StateDir string `json:"state_dir,omitempty"`
	Control  string `json:"control,omitempty"`
	Tmux     *Pane  `json:"tmux,omitempty"`
	Log      string `json:"log,omitempty"`

	worker *worker.Worker   // a worker's, or a swarm loop's current, entry
	entry  *supervise.Entry // a bead's supervisor
	loopWS string           // an AIWG loop's workspace root
	aiwg   bool             // an AIWG loop
	screen []string         // the screen read at this refresh (live rows with a supervisor)
	recAct *worker.Activity // the activity a worker's supervisor recorded
	// staleAct: Activity was judged from a screen that did not answer its last read.
	staleAct bool
}

// Pane is a tmux pane an agent shows in: Socket is a path (tmux -S) or, with Named, a name
// (tmux -L); empty for the default server.
type Pane struct {
	Socket  string `json:"socket,omitempty"`
	Named   bool   `json:"socket_is_name,omitempty"`
	Session string `json:"session"`
	Window  string `json:"window,omitempty"`
}

// InputMark begins the ACTIVITY of an agent that waits for input, with how long it has
// waited: "input 12s".
const InputMark = "input"

// Key names the row among every row of every refresh.
func (r *Row) Key() string {
	return r.Host + "\x00" + string(r.Kind) + "\x00" + r.Source + "\x00" + r.StateDir + "\x00" + r.Name
}

// Ended reports whether the agent ended (an exit code or a reason is known and it is not live).
func (r *Row) Ended() bool { return !r.Live }

// ActivityWords is the activity as swarm ls says it: busy, waiting for input, idle 12s; "-"
// when not live; "input 12s" (InputMark) when the agent has waited for input that long.
func (r *Row) ActivityWords(now time.Time) string {
	if r.Live && !r.WaitingInput.IsZero() {
		// The mark of an agent that waits for a person: what the row is looked at for.
		return InputMark + " " + worker.Age(r.WaitingInput, now)
	}
	if !r.Live || r.Activity == "" {
		return "-"
	}
	w := worker.Activity{State: r.Activity, Since: r.ActivitySince}.Describe(now)
	if r.staleAct {
		w += "?" // judged from a screen that has not answered since
	}
	return w
}

// Sources say where top looks (see the package comment); an empty directory is not looked at.
type Sources struct {
	SwarmDir  string
	StateDir  string
	Workspace string
	// Recent is how long an ended agent stays listed (0: 1 hour).
	Recent time.Duration
	// Swarm and Loops are the options the swarm's workers and loops are opened with (the
	// command line's: the supervisor and monitor commands resume and respawn need).
	Swarm swarm.Options
	Loops loop.Options
	// Hosts, if set, are other machines' agents (swarm top --hosts): a refresh adds the rows
	// of each host's last answer (Refresh first asks them again, waiting at most Timeout for
	// those that are online; Snapshot never waits for a host).
	Hosts *Hosts
}

// Model reads the rows and keeps what it needs from one refresh to the next: the screens it saw
// (to tell a change), the usage it parsed from logs.
type Model struct {
	src     Sources
	sw      *swarm.Swarm
	loops   *loop.Loops
	matcher *agent.Matcher

	// files are the records parsed at the last refresh; registered, this refresh's registered
	// beads by state directory; reconciled, that the first refresh closed the records of the
	// beads whose supervisors died (later refreshes only read).
	files      files
	registered map[string]map[string]bool
	reconciled bool

	mu      sync.Mutex
	seen    map[string]*seen
	reads   map[string]*reading // by row key
	sem     chan struct{}       // screen reads at once
	answers chan struct{}
	usage   map[string]usageCache
	Timeout time.Duration // for one control request (default 300 ms)
}

type seen struct {
	text    string
	changed time.Time
}

type usageCache struct {
	size    int64
	mtime   time.Time
	cost    float64
	hasCost bool
}

// Open opens the sources. A swarm directory that does not exist is not created (a refresh opens
// it once it is there).
func Open(src Sources) (*Model, error) {
	if src.Recent <= 0 {
		src.Recent = time.Hour
	}
	m := &Model{src: src, seen: map[string]*seen{}, reads: map[string]*reading{}, sem: make(chan struct{}, 64),
		answers: make(chan struct{}, 1), usage: map[string]usageCache{}, Timeout: 300 * time.Millisecond,
		files: files{m: map[string]*cached{}}}
	mt, err := agent.Generic().Screen.Compile()
	if err != nil {
		return nil, err
	}
	m.matcher = mt
	if err := m.openSwarm(); err != nil {
		return nil, err
	}
	return m, nil
}

// openSwarm opens the swarm directory once it is there: one made after Open (the first
// `swarm spawn` on the machine) is opened by the next refresh.
func (m *Model) openSwarm() error {
	if m.sw != nil || m.src.SwarmDir == "" || !isDir(m.src.SwarmDir) {
		return nil
	}
	sw, err := swarm.Open(m.src.SwarmDir, m.src.Swarm)
	if err != nil {
		return err
	}
	lo := m.src.Loops
	lo.Swarm = m.src.Swarm
	loops, err := loop.Open(m.src.SwarmDir, lo)
	if err != nil {
		return err
	}
	m.sw, m.loops = sw, loops
	return nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Sources is what the model was opened with.
func (m *Model) Sources() Sources { return m.src }

// Refresh reads every row now. Only the first refresh writes: it closes the records of beads
// whose supervisors died, as dispatch ps does; later ones only read (a bead whose supervisor
// dies while top shows it says supervisor-lost until a dispatch verb closes its record), and
// parse again only the records whose files changed.
//
// Refresh waits for the live rows' screens (each at most Timeout; swarm top --once); Snapshot
// does not (the UI).
func (m *Model) Refresh(ctx context.Context) ([]*Row, error) { return m.refresh(ctx, true) }

// Snapshot is Refresh without waiting for a screen: the rows from the files at once, each live
// row's screen fields (LastLine, an activity judged from the screen) from its supervisor's last
// answer, ScreenError set where it has not answered; the reads it starts are told on Answers.
func (m *Model) Snapshot(ctx context.Context) ([]*Row, error) { return m.refresh(ctx, false) }

func (m *Model) refresh(ctx context.Context, wait bool) ([]*Row, error) {
	now := time.Now()
	m.registered = map[string]map[string]bool{}
	defer m.files.sweep()
	var rows []*Row
	owned := map[string]bool{} // beads shown as a loop's or a task's
	errs := []error{m.openSwarm()}
	if m.sw != nil {
		r, err := m.swarmRows(ctx, now)
		rows = append(rows, r...)
		errs = append(errs, err)
	}
	if m.src.Workspace != "" {
		rows = append(rows, m.aiwgRows(ctx, now, owned)...)
		rows = append(rows, m.taskRows(ctx, now, owned)...)
	}
	if m.src.StateDir != "" && isDir(m.src.StateDir) {
		rows = append(rows, m.dispatchRows(ctx, now, owned)...)
	}
	m.look(ctx, rows, now, wait)
	rows = append(rows, m.hostRows(ctx, wait)...)
	for _, err := range errs {
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// hostRows are the rows of the other hosts' last answers; with wait, after asking them again
// (the online ones waited for up to the host Timeout).
func (m *Model) hostRows(ctx context.Context, wait bool) []*Row {
	if m.src.Hosts == nil {
		return nil
	}
	if wait {
		m.src.Hosts.Poll(ctx)
	}
	return m.src.Hosts.Rows()
}

// MergeHosts is rows with the other hosts' rows replaced by their last answers (the UI, when a
// host answers): new rows, those given left as they were.
func (m *Model) MergeHosts(rows []*Row) []*Row {
	var out []*Row
	for _, r := range rows {
		if r.Host == "" {
			out = append(out, r)
		}
	}
	return append(out, m.hostRows(context.Background(), false)...)
}

// HostAnswers is told when a host's poll ends, for the caller to MergeHosts (nil without
// Sources.Hosts).
func (m *Model) HostAnswers() <-chan struct{} {
	if m.src.Hosts == nil {
		return nil
	}
	return m.src.Hosts.Answers()
}

// Hosts is the state of each host of Sources.Hosts (nil without).
func (m *Model) Hosts() []HostStatus {
	if m.src.Hosts == nil {
		return nil
	}
	return m.src.Hosts.Status()
}

// Look reads again the screens of the live rows' agents (their activity and last line) and
// nothing else: what changes between two refreshes without a state file changing. It returns
// new rows at once, with what each screen said at its last answer; the reads it starts answer
// later (Answers tells when, Merge takes them in). Those given are left as they were.
func (m *Model) Look(ctx context.Context, rows []*Row) []*Row {
	out := copyRows(rows)
	m.look(ctx, out, time.Now(), false)
	return out
}

// Merge is rows with what the screens answered since (no read is started): new rows, those
// given left as they were.
func (m *Model) Merge(rows []*Row) []*Row {
	out := copyRows(rows)
	m.judge(out, time.Now())
	return out
}

// Answers is told (at most one pending) when a screen read started by Look or Snapshot answers,
// for the caller to Merge.
func (m *Model) Answers() <-chan struct{} { return m.answers }

func copyRows(rows []*Row) []*Row {
	out := make([]*Row, len(rows))
	for i, r := range rows {
		c := *r
		c.screen = nil
		out[i] = &c
	}
	return out
}

// reading is what top knows of one live row's screen: the last answer, and the read in flight
// (at most one per agent, so a supervisor that does not answer holds one goroutine, not one per
// refresh).
type reading struct {
	lines    []string  // the last answer (nil: none yet)
	waiting  time.Time // since when the agent waits for input, as the last answer said
	err      error     // the last read's error, nil once one answers
	inflight bool      // a read is in flight, since started
	started  time.Time //
}

// errNoAnswer is a screen read that did not answer within the model's Timeout.
var errNoAnswer = errors.New("not answering")

// look starts a read of each live row's screen (unless one is in flight) and fills in the
// rows: with wait, once those reads answered or Timeout passed (swarm top --once); without, at
// once, from the last answers (the UI: a supervisor that is slow or hung never holds the rows
// that come from files).
func (m *Model) look(ctx context.Context, rows []*Row, now time.Time, wait bool) {
	var wg sync.WaitGroup
	m.mu.Lock()
	for _, r := range rows {
		if !r.Live || r.Host != "" {
			continue
		}
		k := r.Key()
		rd := m.reads[k]
		if rd == nil {
			rd = &reading{}
			m.reads[k] = rd
		}
		if rd.inflight {
			continue
		}
		rd.inflight, rd.started = true, now
		wg.Add(1)
		rc := *r
		go func() {
			defer wg.Done()
			m.sem <- struct{}{}
			a, err := m.screenAnswer(ctx, &rc, 0)
			<-m.sem
			m.mu.Lock()
			rd.inflight = false
			if err == nil {
				rd.lines, rd.waiting, rd.err = a.lines, a.waiting, nil
			} else {
				rd.err = err
			}
			m.mu.Unlock()
			select {
			case m.answers <- struct{}{}:
			default:
			}
		}()
	}
	m.mu.Unlock()
	if wait {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		t := time.NewTimer(m.Timeout + 50*time.Millisecond)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	m.judge(rows, now)
}

// judge fills in the live rows' screen fields from the last answers, and judges their
// activity; a row whose supervisor did not answer its last read, or has not answered one for
// longer than Timeout, keeps what it said last and says so (ScreenError).
func (m *Model) judge(rows []*Row, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	keep := map[string]bool{}
	for _, r := range rows {
		if !r.Live || r.Host != "" {
			// A host's row is judged there.
			continue
		}
		k := r.Key()
		keep[k] = true
		r.ScreenError, r.staleAct = "", false
		if rd := m.reads[k]; rd != nil {
			r.screen = rd.lines
			if r.worker == nil {
				// A bead's, an AIWG loop's or a task's agent: its supervisor says whether it
				// waits for input (a worker's records it in state.json, read already).
				r.WaitingInput = rd.waiting
			}
			switch {
			case rd.inflight && time.Since(rd.started) > m.Timeout:
				r.ScreenError = errNoAnswer.Error()
			case rd.err != nil && !errors.Is(rd.err, errNoSupervisor):
				r.ScreenError = rd.err.Error()
				if errors.Is(rd.err, errNoAnswer) {
					r.ScreenError = errNoAnswer.Error()
				}
			}
		}
		r.LastLine = lastLine(r.screen)
		text := strings.Join(r.screen, "\n")
		s := m.seen[k]
		if s == nil {
			since := now
			if fi, err := os.Stat(r.Log); err == nil && r.Log != "" {
				since = fi.ModTime()
			}
			s = &seen{text: text, changed: since}
			m.seen[k] = s
		} else if s.text != text {
			s.text, s.changed = text, now
		}
		if r.recAct != nil {
			r.Activity, r.ActivitySince = r.recAct.State, r.recAct.Since
			continue
		}
		if r.screen == nil {
			continue
		}
		r.staleAct = r.ScreenError != ""
		last := tail(r.screen, 15)
		switch {
		case m.matcher.Waiting(last):
			r.Activity = ActivityWaiting
		case m.matcher.Busy(last) || now.Sub(s.changed) < 3*time.Second:
			r.Activity = ActivityBusy
		default:
			r.Activity = ActivityIdle
		}
		r.ActivitySince = s.changed
	}
	for k := range m.seen {
		if !keep[k] {
			delete(m.seen, k)
		}
	}
	for k, rd := range m.reads {
		if !keep[k] && !rd.inflight {
			delete(m.reads, k)
		}
	}
}

// tail is the last n lines with text, last first.
func tail(lines []string, n int) []string {
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			out = append(out, lines[i])
		}
	}
	return out
}

func lastLine(lines []string) string {
	if t := tail(lines, 1); len(t) == 1 {
		return strings.TrimSpace(t[0])
	}
	return ""
}

// Filter says which rows to keep: each set field must match (Text: a substring of the name,
// the status, the reason, the last line or a tag, any case).
type Filter struct {
	Kind   Kind
	Status string
	Tag    string
	Text   string
}

// Keep reports whether r passes f.
func (f Filter) Keep(r *Row) bool {
	if f.Kind != "" && r.Kind != f.Kind {
		return false
	}
	if f.Status != "" && !strings.EqualFold(r.Status, f.Status) && !(f.Status == "live" && r.Live) &&
		!(f.Status == "ended" && !r.Live) {
		return false
	}
	if f.Tag != "" && !slices.Contains(r.Tags, f.Tag) {
		return false
	}
	if f.Text != "" {
		t := strings.ToLower(f.Text)
		hay := strings.ToLower(strings.Join(append([]string{r.Host, r.Name, r.Source, r.Status, r.Reason, r.LastLine}, r.Tags...), "\x00"))
		if !strings.Contains(hay, t) {
			return false
		}
	}
	return true
}

// Apply keeps the rows f keeps.
func (f Filter) Apply(rows []*Row) []*Row {
	var out []*Row
	for _, r := range rows {
		if f.Keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// SortKeys are the orders rows can be sorted in.
var SortKeys = []string{"kind", "name", "status", "age", "activity", "cost"}

// Sort sorts rows by key (one of SortKeys; kind by default): then by kind and name.
func Sort(rows []*Row, key string) {
	kindAt := func(k Kind) int { return slices.Index(Kinds, k) }
	base := func(a, b *Row) int {
		if c := kindAt(a.Kind) - kindAt(b.Kind); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Key(), b.Key())
	}
	slices.SortStableFunc(rows, func(a, b *Row) int {
		c := 0
		switch key {
		case "name":
			c = strings.Compare(a.Name, b.Name)
		case "status":
			c = strings.Compare(a.Status, b.Status)
		case "age": // oldest first
			c = a.Started.Compare(b.Started)
		case "activity": // waiting for input (the longest first), waiting, busy, the longest idle
			if c = boolRank(a.WaitingInput.IsZero()) - boolRank(b.WaitingInput.IsZero()); c != 0 || !a.WaitingInput.IsZero() {
				c = cmp.Or(c, a.WaitingInput.Compare(b.WaitingInput))
				break
			}
			rank := map[string]int{ActivityWaiting: 0, ActivityBusy: 1, ActivityIdle: 2, "": 3}
			if c = rank[a.Activity] - rank[b.Activity]; c == 0 && a.Activity == ActivityIdle {
				c = a.ActivitySince.Compare(b.ActivitySince)
			}
		case "cost": // the most expensive first
			ca, cb := -1.0, -1.0
			if a.Cost != nil {
				ca = *a.Cost
			}
			if b.Cost != nil {
				cb = *b.Cost
			}
			switch {
			case ca > cb:
				c = -1
			case ca < cb:
				c = 1
			}
		}
		if c != 0 {
			return c
		}
		return base(a, b)
	})
}

// boolRank is 1 for true, 0 for false: false sorts first.
func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
