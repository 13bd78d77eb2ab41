package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// RecordsVerb is the hidden dispatch verb that prints a bead's Snapshot on the host:
// `dispatch __records --state-dir DIR BEAD`. It is how the records come back over ssh: our
// own binary reads them there (regular files, bounded, never through a link), not a shell.
const RecordsVerb = "__records"

// Snapshot is what a host says of one bead: whether a supervisor runs it there, and its run
// and result records as they are written there (the bytes, checked again when they are
// written here).
type Snapshot struct {
	Bead string `json:"bead"`
	Live bool   `json:"live"`
	// Starting says a dispatch held the bead's lock at the read: an attempt being opened there
	// (its records not yet written), or its records being written.
	Starting bool            `json:"starting,omitempty"`
	Run      json.RawMessage `json:"run,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
}

// has says whether the snapshot's run record is of attempt number or a later one.
func (s *Snapshot) has(number int) bool {
	if len(s.Run) == 0 {
		return false
	}
	run, err := record.DecodeRun(s.Run)
	return err != nil || run.Attempt >= number // unreadable: not known absent
}

// Final says whether the snapshot holds the final result of attempt number (0: any), and its
// run record with it.
func (s *Snapshot) Final(number int) (*record.Result, bool) {
	if len(s.Result) == 0 {
		return nil, false
	}
	res, err := record.DecodeResult(s.Result)
	if err != nil || res.Status == record.StatusRunning || (number > 0 && res.Attempt < number) {
		return nil, false
	}
	// The host's supervisor writes the final run record, then the result, and the records
	// verb reads them without the bead's lock: a read between the two writes has the result
	// final and the run record of the same attempt still running. Not final yet: brought
	// back, those records would disagree.
	if len(s.Run) > 0 {
		if run, err := record.DecodeRun(s.Run); err == nil && run.Attempt == res.Attempt && run.Status == record.StatusRunning {
			return nil, false
		}
	}
	return res, true
}

// Snapshot reads bead's snapshot on the host (its dispatch's RecordsVerb, which also closes
// the records of a supervisor that died there, as dispatch wait does). What is read is bounded
// while it is read (Options.MaxOutput, 16 MiB: two records of at most a few MB).
func (c *Conn) Snapshot(ctx context.Context, bead string, timeout time.Duration) (*Snapshot, error) {
	if s := c.server(ctx); s != nil {
		sctx, cancel := context.WithTimeout(ctx, timeout)
		snap, err := s.records(sctx, bead)
		cancel()
		switch {
		case errors.Is(err, errNotSent):
		case err != nil:
			return nil, err
		case snap.Bead != bead:
			return nil, fmt.Errorf("host %s: asked for the records of %s, got %q's", c.Host.Name, bead, Printable(snap.Bead))
		default:
			return snap, nil
		}
	}
	res, err := c.Run(ctx, Cmd{Argv: []string{c.Program("dispatch"), RecordsVerb, "--state-dir", c.Host.StateDir, bead},
		Env: c.Env(), Timeout: timeout})
	if err != nil {
		return nil, err
	}
	if res.Code != 0 {
		return nil, fmt.Errorf("host %s: dispatch %s exited %d: %s", c.Host.Name, RecordsVerb, res.Code, lastLine(res.Stderr))
	}
	var s Snapshot
	if err := json.Unmarshal(res.Stdout, &s); err != nil {
		return nil, fmt.Errorf("host %s: reading the records of %s: %w", c.Host.Name, bead, err)
	}
	if s.Bead != bead {
		return nil, fmt.Errorf("host %s: asked for the records of %s, got %q's", c.Host.Name, bead, s.Bead)
	}
	return &s, nil
}

// OfflineError is a host that stopped answering: no snapshot could be read for longer than
// the wait's OfflineAfter. LastHeartbeat is the last successful read.
type OfflineError struct {
	Host          string
	LastHeartbeat time.Time
	Err           error // the last read's error
}

func (e *OfflineError) Error() string {
	return fmt.Sprintf("host %s is offline: no answer since %s (%v)", e.Host, e.LastHeartbeat.Format(time.RFC3339), e.Err)
}

func (e *OfflineError) Unwrap() error { return ErrUnreachable }

// Watch says how Wait follows a bead on a host.
type Watch struct {
	Every        time.Duration // between reads, at most; 0 is 1 s
	OfflineAfter time.Duration // no successful read for this long: offline; 0 is 30 s
	// Heartbeat, if set, is told of every successful read (a swarm's last_heartbeat).
	Heartbeat func(time.Time, *Snapshot)
}

// firstRead is the wait before Wait's second read; each wait doubles the one before, up to
// Watch.Every: a short attempt's end is seen within a fraction of its length, a long one is
// read every Every (a read is a process of ours started on the host).
const firstRead = 25 * time.Millisecond

// Through a host's server, a read of the records costs a line each way and two files read by a
// process already running: the server reads them every watchFast for an attempt's first
// watchFastFor (a short attempt's end seen within tens of milliseconds), then every Every.
const (
	watchFast    = 20 * time.Millisecond
	watchFastFor = 2 * time.Second
)

// Wait reads bead's snapshot on the host until it holds the final result of attempt number,
// and returns it. The reads come quickly at first, then every w.Every (firstRead). A host that
// does not answer for w.OfflineAfter is an *OfflineError (errors.Is ErrUnreachable); each read
// is bounded by what is left of that time, so a host cut off is reported within OfflineAfter
// plus one read's set-up.
func (c *Conn) Wait(ctx context.Context, bead string, number int, w Watch) (*Snapshot, error) {
	return c.wait(ctx, bead, number, w, time.Time{})
}

// ErrNotStarted is an attempt whose start was lost with the connection and that the host shows
// never began: no record of it, no supervisor, no dispatch holding the bead's lock, startSettle
// after the start was lost (a dispatch still alive there would hold the lock by then).
var ErrNotStarted = errors.New("the attempt's start was lost with the connection, and it never began on the host")

// startSettle is how long after a lost start the host must show the attempt absent before it is
// judged never begun.
const startSettle = 5 * time.Second

// wait is Wait; lost, when set, is when the attempt's start was lost with the connection: a
// read startSettle later that shows it never began there ends the wait with ErrNotStarted
// (Wait alone would read for ever: nothing of the attempt is ever final).
func (c *Conn) wait(ctx context.Context, bead string, number int, w Watch, lost time.Time) (*Snapshot, error) {
	every := OrDefault(w.Every, time.Second)
	offline := OrDefault(w.OfflineAfter, 30*time.Second)
	last := time.Now()
	began := last
	pause := min(firstRead, every)
	tick := time.NewTimer(pause)
	defer tick.Stop()
	for {
		left := offline - time.Since(last)
		// Through the host's server, the reads there come every watchFast for the wait's
		// first seconds, then every Every.
		poll := every
		if time.Since(began) < watchFastFor {
			poll = min(watchFast, every)
		}
		s, watched, err := c.watch(ctx, bead, number, every, poll, max(left, 100*time.Millisecond))
		switch {
		case err == nil:
			last = time.Now()
			if w.Heartbeat != nil {
				w.Heartbeat(last, s)
			}
			if _, ok := s.Final(number); ok {
				return s, nil
			}
			if !lost.IsZero() && time.Since(lost) >= startSettle && !s.Live && !s.Starting && !s.has(number) {
				return nil, fmt.Errorf("host %s: %s attempt %d: %w", c.Host.Name, bead, number, ErrNotStarted)
			}
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case time.Since(last) >= offline:
			return nil, &OfflineError{Host: c.Host.Name, LastHeartbeat: last, Err: err}
		case errors.Is(err, ErrNoMaster):
			// The master closed (ServerAlive): one new connection is tried, bounded by
			// ConnectTimeout; a host that answers again is back.
			rctx, cancel := context.WithTimeout(ctx, max(offline-time.Since(last), 100*time.Millisecond))
			c.connect(rctx)
			cancel()
		}
		if watched && err == nil {
			// The host's server waited for the end itself: read again at once.
			continue
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		pause = min(2*pause, every)
		tick.Reset(pause)
	}
}

// watch reads bead's snapshot: through the host's server when it runs, which reads it every
// poll and answers once attempt number's result is final there or after every (watched),
// else one read (Snapshot). timeout bounds the read, and is added to every for the server's.
func (c *Conn) watch(ctx context.Context, bead string, number int, every, poll, timeout time.Duration) (*Snapshot, bool, error) {
	if s := c.server(ctx); s != nil {
		wctx, cancel := context.WithTimeout(ctx, timeout+every)
		snap, err := s.watch(wctx, bead, number, every, poll)
		cancel()
		switch {
		case errors.Is(err, errNotSent):
		case err != nil:
			return nil, true, err
		case snap.Bead != bead:
			return nil, true, fmt.Errorf("host %s: asked for the records of %s, got %q's", c.Host.Name, bead, Printable(snap.Bead))
		default:
			return snap, true, nil
		}
	}
	snap, err := c.Snapshot(ctx, bead, timeout)
	return snap, false, err
}

// Start runs the host's dispatch on a bead: args are dispatch's words after the program (the
// bead, the host's clone, the agent, "-" for the prompt, flags), the prompt goes on its stdin,
// its console lines to out and its diagnostics to errOut; env is more environment for it. It returns dispatch's exit status
// there; an error wrapping ErrUnreachable means the connection was lost, and whether the
// attempt started is for Wait to find out.
func (c *Conn) Start(ctx context.Context, args, env []string, prompt string, out, errOut io.Writer) (int, error) {
	argv := append([]string{c.Program("dispatch"), "--state-dir", c.Host.StateDir}, args...)
	res, err := c.Run(ctx, Cmd{Argv: argv, Env: append(c.Env(), env...), Stdin: stringsReader(prompt), Stdout: out, Stderr: errOut, Timeout: 5 * time.Minute})
	if err != nil {
		return -1, err
	}
	if res.Code != 0 && len(res.Stderr) > 0 {
		return res.Code, fmt.Errorf("host %s: dispatch exited %d: %s", c.Host.Name, res.Code, refusal(res.Stderr))
	}
	if res.Code != 0 {
		return res.Code, fmt.Errorf("host %s: dispatch exited %d", c.Host.Name, res.Code)
	}
	return 0, nil
}
func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// refusal is why the host's dispatch refused an attempt, from its stderr: its last line, or,
// for a usage error, the line before the hint that follows it ("dispatch: run 'dispatch --help'
// for usage"), which says nothing of why and names a command the user did not run.
func refusal(stderr []byte) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	if n := len(lines); n > 1 && strings.HasSuffix(strings.TrimSpace(lines[n-1]), "--help' for usage") {
		lines = lines[:n-1]
	}
	return lastLine([]byte(strings.Join(lines, "\n")))
}

// BringBack writes the snapshot's run and result records into the local state directory, as
// records written here are (checked against their schemas, atomically, under their locks), so
// analyze-runs and validate-state see the host's work. The run record's result_file is made
// the local one; everything else (the repo is the host's clone) is kept as the host wrote it.
func BringBack(ctx context.Context, store record.Store, s *Snapshot) error {
	if len(s.Run) > 0 {
		run, err := record.DecodeRun(s.Run)
		if err != nil {
			return fmt.Errorf("the run record of %s from its host: %w", s.Bead, err)
		}
		if run.Bead != s.Bead {
			return fmt.Errorf("the run record of %s from its host names bead %q", s.Bead, run.Bead)
		}
		run.ResultFile = record.ResultFile(store.Dir, s.Bead)
		if err := store.WriteRun(ctx, run); err != nil {
			return err
		}
	}
	if len(s.Result) > 0 {
		res, err := record.DecodeResult(s.Result)
		if err != nil {
			return fmt.Errorf("the result record of %s from its host: %w", s.Bead, err)
		}
		if res.Bead != s.Bead {
			return fmt.Errorf("the result record of %s from its host names bead %q", s.Bead, res.Bead)
		}
		if err := store.WriteResult(ctx, res); err != nil {
			return err
		}
	}
	return nil
}
