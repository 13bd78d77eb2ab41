package top

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/remote"
)

// Other hosts: `swarm top --hosts hosts.yaml` shows the agents of each host of a hosts file
// beside this machine's. Each host is read over the same kind of connection swarm run uses (an
// OpenSSH ControlMaster, internal/remote), by the host's own swarm binary: its hidden verb
// AgentsVerb reads the host's agents as `swarm top --once` does there and prints them as one
// JSON document (HostAnswer). Every host is polled on a goroutine of its own: a host that does
// not answer holds that goroutine only, and is marked offline with the time it last answered.

// AgentsVerb is swarm's hidden verb a host answers with: `swarm __agents --state-dir DIR
// --workspace DIR` prints that host's agents as a HostAnswer.
const AgentsVerb = "__agents"

// MaxHostRows bounds the rows one host's answer holds: past it the rest are counted
// (HostAnswer.Truncated), not sent. A host is a machine, not a data set.
const MaxHostRows = 2000

// maxHostAnswer bounds what is read of one answer (remote.Options.MaxOutput): MaxHostRows rows
// of at most a few hundred bytes each, with room.
const maxHostAnswer = 8 << 20

// HostAnswer is what AgentsVerb prints.
type HostAnswer struct {
	Rows      []*Row `json:"rows"`
	Truncated int    `json:"truncated,omitempty"`
}

// Answer is AgentsVerb's work on the host: the rows of src (Refresh, as --once), at most
// MaxHostRows of them, as one JSON document on w.
func Answer(ctx context.Context, src Sources, w io.Writer) error {
	m, err := Open(src)
	if err != nil {
		return err
	}
	rows, err := m.Refresh(ctx)
	if err != nil {
		return err
	}
	Sort(rows, "kind")
	a := HostAnswer{Rows: rows}
	if len(rows) > MaxHostRows {
		a.Rows, a.Truncated = rows[:MaxHostRows], len(rows)-MaxHostRows
	}
	if a.Rows == nil {
		a.Rows = []*Row{}
	}
	return json.NewEncoder(w).Encode(a)
}

// decodeAnswer reads a host's answer and makes every row fit to show here: its text made
// printable (it is the host's), its host named, what only the host can act on dropped.
func decodeAnswer(host string, b []byte) (*HostAnswer, error) {
	var a HostAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("host %s: reading its agents: %w", host, err)
	}
	a.Truncated = max(a.Truncated, 0)
	if len(a.Rows) > MaxHostRows {
		a.Truncated += len(a.Rows) - MaxHostRows
		a.Rows = a.Rows[:MaxHostRows]
	}
	rows := a.Rows[:0]
	for _, r := range a.Rows {
		if r == nil || !slices.Contains(Kinds, r.Kind) {
			continue
		}
		r.Host = host
		r.Name, r.Source, r.Status = remote.Printable(r.Name), remote.Printable(r.Source), remote.Printable(r.Status)
		r.Reason, r.LastLine, r.ScreenError = remote.Printable(r.Reason), remote.Printable(r.LastLine), remote.Printable(r.ScreenError)
		r.Activity = remote.Printable(r.Activity)
		for i, tag := range r.Tags {
			r.Tags[i] = remote.Printable(tag)
		}
		// The host's paths and sockets are the host's: nothing here reaches them.
		r.Control, r.Tmux, r.Log = "", nil, ""
		rows = append(rows, r)
	}
	a.Rows = rows
	return &a, nil
}

// HostOptions say how hosts are polled.
type HostOptions struct {
	// Every is the pause between two polls of a host (0: 1 s).
	Every time.Duration
	// Timeout bounds one poll (and a connection's set-up): a host that has not answered within
	// it is offline until it answers again (0: 5 s).
	Timeout time.Duration
	// SSH is the ssh program ("": ssh on PATH).
	SSH string
}

// HostStatus is what top knows of one host.
type HostStatus struct {
	Name string `json:"name"`
	// Online: its last poll answered, and the one in flight (if any) is not past the Timeout.
	Online bool `json:"online"`
	// LastSeen is when it last answered (zero: never).
	LastSeen time.Time `json:"last_seen,omitzero"`
	// Error is why it is offline (the last poll's error, one line).
	Error string `json:"error,omitempty"`
	// Agents is how many rows its last answer held; Truncated how many more it had.
	Agents    int `json:"agents"`
	Truncated int `json:"truncated,omitempty"`
	// Polled counts the polls that ended (answered or not).
	Polled int `json:"-"`
}

// Words is the host's state as the UI's header says it: "h1 12", "h3 offline (seen 40s ago)".
func (s HostStatus) Words(now time.Time) string {
	if s.Online {
		return fmt.Sprintf("%s %d", s.Name, s.Agents)
	}
	if s.LastSeen.IsZero() && s.Polled == 0 {
		return s.Name + " …"
	}
	return fmt.Sprintf("%s offline (%s)", s.Name, s.Seen(now))
}

// Seen is when the host last answered: "seen 40s ago", "never seen".
func (s HostStatus) Seen(now time.Time) string {
	if s.LastSeen.IsZero() {
		return "never seen"
	}
	return "seen " + now.Sub(s.LastSeen).Round(time.Second).String() + " ago"
}

// Hosts polls every host of a hosts file for its agents (WatchHosts), each on its own
// goroutine; Rows and Status never wait for a host.
type Hosts struct {
	o      HostOptions
	d      *remote.Dialer
	polls  []*hostPoll
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// answers is told (at most one pending) when a poll ends.
	answers chan struct{}
	// ended is broadcast (closed and replaced) when a poll ends, for Poll's waiters.
	mu    sync.Mutex
	ended chan struct{}
}

type hostPoll struct {
	host *remote.Host
	kick chan struct{}

	// Under Hosts.mu:
	conn     *remote.Conn // the poll's connection, for the actions (nil until one is made)
	status   HostStatus
	rows     []*Row
	inflight bool
	started  time.Time
}

// WatchHosts starts polling hosts (one goroutine each) until Close.
func WatchHosts(ctx context.Context, hosts []*remote.Host, o HostOptions) (*Hosts, error) {
	o.Every = orDefault(o.Every, time.Second)
	o.Timeout = orDefault(o.Timeout, 5*time.Second)
	d, err := remote.NewDialer(remote.Options{SSH: o.SSH, ConnectTimeout: o.Timeout,
		// ssh counts in whole seconds, and 0 would turn the keep-alive off.
		AliveInterval: max(o.Timeout/2, time.Second),
		MaxOutput:     maxHostAnswer})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	h := &Hosts{o: o, d: d, cancel: cancel, answers: make(chan struct{}, 1), ended: make(chan struct{})}
	for _, host := range hosts {
		p := &hostPoll{host: host, kick: make(chan struct{}, 1), status: HostStatus{Name: host.Name}}
		h.polls = append(h.polls, p)
		h.wg.Add(1)
		go h.run(ctx, p)
	}
	return h, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Close stops the polls and closes the connections (no ssh process of ours outlives it).
func (h *Hosts) Close() error {
	h.cancel()
	h.wg.Wait()
	return h.d.Close()
}

// run polls one host until ctx ends: connect (again) when there is no connection, ask, note
// the answer or the error, wait Every or a kick.
func (h *Hosts) run(ctx context.Context, p *hostPoll) {
	defer h.wg.Done()
	var conn *remote.Conn
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
		h.mu.Lock()
		p.inflight, p.started = true, time.Now()
		h.mu.Unlock()
		a, err := h.poll(ctx, p, &conn)
		if ctx.Err() != nil {
			return
		}
		h.note(p, a, err)
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(h.o.Every)
	}
}

// poll asks the host once, dialing it first when needed; a connection whose master closed is
// opened again.
func (h *Hosts) poll(ctx context.Context, p *hostPoll, conn **remote.Conn) (*HostAnswer, error) {
	if *conn == nil {
		// ssh's own ConnectTimeout (the Timeout) says why first; the host is marked offline
		// at the Timeout all the same (Status).
		dctx, cancel := context.WithTimeout(ctx, h.o.Timeout+2*time.Second)
		c, err := h.d.Dial(dctx, p.host)
		cancel()
		if err != nil {
			return nil, err
		}
		*conn = c
		h.mu.Lock()
		p.conn = c
		h.mu.Unlock()
	}
	c := *conn
	argv := []string{c.Program("swarm"), AgentsVerb, "--state-dir", p.host.StateDir, "--workspace", p.host.Repo}
	res, err := c.Run(ctx, remote.Cmd{Argv: argv, Env: c.Env(), Timeout: h.o.Timeout})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, fmt.Errorf("host %s: no answer within %s", p.host.Name, h.o.Timeout)
	}
	if errors.Is(err, remote.ErrNoMaster) {
		rctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
		c.Reconnect(rctx)
		cancel()
	}
	if err != nil {
		return nil, err
	}
	if res.Code != 0 {
		if res.Code == 126 || res.Code == 127 {
			return nil, fmt.Errorf("host %s has no swarm (%s): install the toolkit's binaries there", p.host.Name, c.Program("swarm"))
		}
		return nil, fmt.Errorf("host %s: swarm %s exited %d: %s", p.host.Name, AgentsVerb, res.Code, lastErrLine(res.Stderr))
	}
	return decodeAnswer(p.host.Name, res.Stdout)
}

func lastErrLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := remote.Printable(lines[i]); l != "" {
			return l
		}
	}
	return "no message"
}

// note records a poll's end and tells Answers and Poll's waiters.
func (h *Hosts) note(p *hostPoll, a *HostAnswer, err error) {
	h.mu.Lock()
	p.inflight = false
	p.status.Polled++
	if err == nil {
		p.rows = a.Rows
		p.status.Online, p.status.LastSeen, p.status.Error = true, time.Now(), ""
		p.status.Agents, p.status.Truncated = len(a.Rows), a.Truncated
	} else {
		p.status.Online, p.status.Error = false, remote.Printable(err.Error())
	}
	close(h.ended)
	h.ended = make(chan struct{})
	h.mu.Unlock()
	select {
	case h.answers <- struct{}{}:
	default:
	}
}

// Answers is told (at most one pending) when a host's poll ends.
func (h *Hosts) Answers() <-chan struct{} { return h.answers }

// Status is every host's state now, in the hosts file's order. A host whose poll has been in
// flight longer than the Timeout is offline already: a host cut off is marked within the
// Timeout, not when ssh gives up.
func (h *Hosts) Status() []HostStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]HostStatus, len(h.polls))
	for i, p := range h.polls {
		out[i] = h.statusOf(p)
	}
	return out
}

func (h *Hosts) statusOf(p *hostPoll) HostStatus {
	s := p.status
	if p.inflight && time.Since(p.started) > h.o.Timeout {
		s.Online, s.Error = false, fmt.Sprintf("host %s: no answer within %s", p.host.Name, h.o.Timeout)
	}
	return s
}

// Rows are copies of the rows of every host's last answer; an offline host's are kept, with
// HostOffline set.
func (h *Hosts) Rows() []*Row {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Row
	for _, p := range h.polls {
		off := !h.statusOf(p).Online
		for _, r := range p.rows {
			c := *r
			c.HostOffline = off
			out = append(out, &c)
		}
	}
	return out
}

// Poll asks every host that is online (or has not answered yet) again now, and waits until
// each of them has answered or failed, or ctx ends. An offline host is asked too, and not
// waited for: it answers in its own time.
func (h *Hosts) Poll(ctx context.Context) {
	h.mu.Lock()
	want := map[*hostPoll]int{}
	for _, p := range h.polls {
		s := h.statusOf(p)
		if s.Online || s.Polled == 0 {
			// One more poll must end than have ended now (one in flight ends first).
			want[p] = s.Polled + 1
			if p.inflight {
				want[p]++
			}
		}
	}
	h.mu.Unlock()
	for _, p := range h.polls {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
	for {
		h.mu.Lock()
		done := true
		for p, n := range want {
			if p.status.Polled < n && !(p.inflight && time.Since(p.started) > h.o.Timeout) {
				done = false
			}
		}
		ended := h.ended
		h.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return
		case <-time.After(h.o.Timeout):
			// Past the Timeout a poll in flight counts as offline: look again.
		}
	}
}
