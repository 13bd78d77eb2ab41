package swarmcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

// The heartbeat: a message typed into a worker on a schedule (to nudge an agent that stopped
// at a rate limit), kept in $SWARM_DIR/heartbeats/<worker>.json in the Python swarm's format,
// changed under heartbeat.lock as it did. The verbs here only edit that file. The beats are
// typed by the worker's own supervisor (heartbeat_beat.go), which reads the file every second:
// no daemon of its own, no pid to go stale, it ends with its worker, it reads the agent's
// screen to type only into an idle agent, and the schedule is the file's (the last beat plus
// the interval), so it survives anything swarm itself does.

// heartbeatLimit bounds what is read of a heartbeat file (a few hundred bytes are expected).
const heartbeatLimit = 1 << 20

// shortInterval is under what the Python swarm warned that an interval is very short.
const shortInterval = 60

// loadHeartbeat reads name's heartbeat; nil when there is none.
func (h *home) loadHeartbeat(name string) (*worker.Heartbeat, error) {
	path := h.dir.Heartbeat(name)
	b, err := statedir.ReadFile(path, heartbeatLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	hb, err := worker.DecodeHeartbeat(b)
	if err == nil && hb.WorkerName != name {
		// Every write goes to the file its worker_name names (as the Python swarm's did): a
		// file that names another must not lead a write elsewhere.
		err = fmt.Errorf("it is the heartbeat of %q, not of %q", hb.WorkerName, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return hb, nil
}

// updateHeartbeat changes name's heartbeat under heartbeat.lock: fn gets the current one (nil
// when there is none) and returns what to write (nil: nothing). A file that cannot be read is
// an error and is left as it is.
func (h *home) updateHeartbeat(ctx context.Context, name string, fn func(hb *worker.Heartbeat) (*worker.Heartbeat, error)) error {
	path := h.dir.Heartbeat(name)
	if err := statedir.MkdirFor(path); err != nil {
		return err
	}
	return fsx.Update(ctx, path, h.dir.HeartbeatLock(), func(old []byte) ([]byte, error) {
		var hb *worker.Heartbeat
		if len(bytes.TrimSpace(old)) > 0 {
			var err error
			if hb, err = worker.DecodeHeartbeat(old); err == nil && hb.WorkerName != name {
				err = fmt.Errorf("it is the heartbeat of %q, not of %q", hb.WorkerName, name)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %v (remove it, or fix it by hand)", path, err)
			}
		}
		nhb, err := fn(hb)
		if err != nil {
			return nil, err
		}
		if nhb == nil {
			return nil, fsx.ErrUnchanged
		}
		return worker.EncodeHeartbeat(nhb), nil
	})
}

// listHeartbeats reads every heartbeat, sorted by worker name. Files that are not heartbeats
// are skipped with a warning (the Python swarm skipped them silently).
func (h *home) listHeartbeats(warn func(string)) ([]*worker.Heartbeat, error) {
	names, err := fsx.Names(h.dir.Heartbeats(), func(n string) (string, bool) { return strings.CutSuffix(n, ".json") })
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*worker.Heartbeat
	for _, n := range names {
		hb, err := h.loadHeartbeat(n)
		switch {
		case err != nil:
			warn(err.Error())
		case hb != nil:
			out = append(out, hb)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].WorkerName < out[j].WorkerName })
	return out, nil
}

// stopHeartbeat marks name's heartbeat stopped if it is live: its worker ended or was removed.
func (h *home) stopHeartbeat(ctx context.Context, name string) error {
	return h.updateHeartbeat(ctx, name, func(hb *worker.Heartbeat) (*worker.Heartbeat, error) {
		if hb == nil || !hb.Live() {
			return nil, nil
		}
		hb.Status, hb.MonitorPID = worker.HeartbeatStopped, nil
		return hb, nil
	})
}

// settleHeartbeats does what the Python swarm did at every start for heartbeats nobody
// watches: a live one whose worker is gone or stopped is stopped, one past its expiry
// expired. heartbeat list and status call it, so that they say what is.
func (h *home) settleHeartbeats(ctx context.Context, hbs []*worker.Heartbeat) {
	var s *worker.State
	now := time.Now()
	for _, hb := range hbs {
		if !hb.Live() {
			continue
		}
		status := ""
		if exp, ok := hb.Expires(); ok && !now.Before(exp) {
			status = worker.HeartbeatExpired
		} else {
			if s == nil {
				var err error
				if s, err = h.reg.Load(); err != nil {
					return
				}
			}
			if w := s.Get(hb.WorkerName); w == nil || !h.check(ctx, w).running {
				status = worker.HeartbeatStopped
			}
		}
		if status == "" {
			continue
		}
		created := hb.CreatedAt
		h.updateHeartbeat(ctx, hb.WorkerName, func(cur *worker.Heartbeat) (*worker.Heartbeat, error) {
			if cur == nil || !cur.Live() || cur.CreatedAt != created {
				return nil, nil
			}
			cur.Status, cur.MonitorPID = status, nil
			return cur, nil
		})
		hb.Status, hb.MonitorPID = status, nil
	}
}

// hbError is a heartbeat verb's error as the Python swarm printed it: "Error: ..." on stderr,
// exit 1.
func hbError(e *env, format string, args ...any) error {
	fmt.Fprintf(e.stderr, "Error: "+format+"\n", args...)
	return &cli.ExitError{Code: cli.ExitFailure}
}

func hbWarn(e *env, format string, args ...any) {
	fmt.Fprintf(e.stderr, "Warning: "+format+"\n", args...)
}

// hbWorker is the worker argument of a heartbeat verb, checked: it names a file.
func hbWorker(c *ucli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", cli.Usagef("the following arguments are required: worker")
	}
	name := c.Args().First()
	if err := statedir.CheckName(statedir.KindWorker, name); err != nil {
		return "", fmt.Errorf("invalid worker name: %v", err)
	}
	return name, nil
}

// hbHome is the worker a heartbeat verb names (hbWorker) and the swarm directory it is in.
func hbHome(c *ucli.Context, e *env) (string, *home, error) {
	name, err := hbWorker(c)
	if err != nil {
		return "", nil, err
	}
	h, err := openHome(e)
	return name, h, err
}

var heartbeatVerb = &verb{
	name: "heartbeat", usage: "type a message into an idle worker on a schedule",
	usageText: "swarm heartbeat start WORKER --interval DUR [--expire DUR] [--message M] [--force]\n" +
		"   swarm heartbeat stop|status|pause|resume WORKER\n   swarm heartbeat list|ls [--format table|json]",
}

var heartbeatVerbs = []*verb{
	{
		name: "start", usage: "start a heartbeat for a worker",
		usageText: "swarm heartbeat start WORKER --interval DUR [--expire DUR] [--message M] [--force]",
		flags: []ucli.Flag{
			&ucli.StringFlag{Name: "interval", Required: true, Usage: "time between beats (`DUR`: 4h, 30m, 90s, 1h30m, bare seconds)"},
			&ucli.StringFlag{Name: "expire", Usage: "stop after `DUR` (default: never)"},
			&ucli.StringFlag{Name: "message", Value: "continue", Usage: "the text typed on each beat (`M`), then Enter"},
			&ucli.BoolFlag{Name: "force", Usage: "replace an active or paused heartbeat"},
		},
		action: heartbeatStart,
	},
	{
		name: "stop", usage: "stop a worker's heartbeat (the file is kept)", usageText: "swarm heartbeat stop WORKER",
		action: func(c *ucli.Context, e *env) error {
			name, h, err := hbHome(c, e)
			if err != nil {
				return err
			}
			found := false
			err = h.updateHeartbeat(c.Context, name, func(hb *worker.Heartbeat) (*worker.Heartbeat, error) {
				if hb == nil {
					return nil, nil
				}
				// Nothing is signalled: the monitor (the worker's supervisor, or a Python
				// swarm's daemon) reads the status before every beat.
				found, hb.Status, hb.MonitorPID = true, worker.HeartbeatStopped, nil
				return hb, nil
			})
			if err != nil {
				return err
			}
			if !found {
				fmt.Fprintf(e.stdout, "No active heartbeat for %s\n", name)
				return nil
			}
			fmt.Fprintf(e.stdout, "Heartbeat stopped for %s\n", name)
			return nil
		},
	},
	{
		name: "list", usage: "list heartbeats", usageText: "swarm heartbeat list|ls [--format table|json]",
		flags:  []ucli.Flag{&ucli.StringFlag{Name: "format", Value: "table", Usage: "table or json"}},
		action: heartbeatList,
	},
	{
		name: "status", usage: "show a worker's heartbeat", usageText: "swarm heartbeat status WORKER [--format text|json]",
		flags:  []ucli.Flag{&ucli.StringFlag{Name: "format", Value: "text", Usage: "text or json"}},
		action: heartbeatStatus,
	},
	{
		name: "pause", usage: "pause a heartbeat", usageText: "swarm heartbeat pause WORKER",
		action: func(c *ucli.Context, e *env) error {
			return heartbeatFlip(c, e, worker.HeartbeatActive, worker.HeartbeatPaused, "active", "paused")
		},
	},
	{
		name: "resume", usage: "resume a paused heartbeat", usageText: "swarm heartbeat resume WORKER",
		action: func(c *ucli.Context, e *env) error {
			return heartbeatFlip(c, e, worker.HeartbeatPaused, worker.HeartbeatActive, "paused", "resumed")
		},
	},
}

// runHeartbeat runs `swarm heartbeat SUBVERB ...`.
func runHeartbeat(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return cli.Usagef("the following arguments are required: heartbeat_command (start, stop, list, ls, status, pause, resume)")
	}
	sub := args[0]
	if sub == "-h" || sub == "--help" || sub == "help" {
		fmt.Fprintf(e.stdout, "Usage:\n   %s\n\n", heartbeatVerb.usageText)
		for _, v := range heartbeatVerbs {
			fmt.Fprintf(e.stdout, "   %-8s %s\n", v.name, v.usage)
		}
		fmt.Fprintf(e.stdout, "\n'swarm heartbeat <verb> --help' shows a verb's options.\n")
		return nil
	}
	if sub == "ls" {
		sub = "list"
	}
	for _, v := range heartbeatVerbs {
		if v.name == sub {
			named := *v
			named.name = "heartbeat " + v.name // the help says "swarm heartbeat start"
			return cli.Run(ctx, named.app(e), append([]string{tool + " heartbeat " + v.name}, args[1:]...))
		}
	}
	return cli.Usagef("argument heartbeat_command: invalid choice: '%s' (choose from 'start', 'stop', 'list', 'status', 'pause', 'resume', 'ls')", sub)
}

// hbDurations reads a heartbeat's interval and expiry; bad says which one is not a duration
// ("interval" or "expire", and its text).
func hbDurations(interval, expire string) (secs, expSecs int64, bad, badText string) {
	secs, err := worker.ParseDuration(interval)
	if err != nil {
		return 0, 0, "interval", interval
	}
	if expire != "" {
		if expSecs, err = worker.ParseDuration(expire); err != nil {
			return 0, 0, "expire", expire
		}
	}
	return secs, expSecs, "", ""
}

// newHeartbeat is a fresh active heartbeat for name, created now.
func newHeartbeat(name string, secs, expSecs int64, message string, now time.Time) *worker.Heartbeat {
	hb := &worker.Heartbeat{WorkerName: name, IntervalSeconds: secs, Message: message, CreatedAt: worker.HeartbeatTime(now),
		Status: worker.HeartbeatActive}
	if expSecs > 0 {
		exp := worker.HeartbeatTime(now.Add(time.Duration(expSecs) * time.Second))
		hb.ExpireAt = &exp
	}
	return hb
}

// monitorOf is the pid that will beat w's heartbeat (its supervisor), recorded as monitor_pid
// so that a Python swarm run on the same directory sees a live monitor and forks none of its
// own; nil when it does not run.
func (h *home) monitorOf(w *worker.Worker) *int64 {
	if e, _ := h.layout.ReadEntry(w.Name); e != nil && e.PID > 0 && supervise.SupervisorAlive(e.PID, w.Name) {
		pid := int64(e.PID)
		return &pid
	}
	return nil
}

// heartbeatFor checks that w can have a heartbeat of ours: it runs under a supervisor of this
// swarm, which types the beats. A worker the Python swarm started has none (its own
// heartbeat daemons still serve it).
func heartbeatFor(ctx context.Context, h *home, w *worker.Worker) error {
	if !w.Supervised() {
		if w.Tmux == nil {
			return errors.New("heartbeat requires tmux worker")
		}
		return fmt.Errorf("worker '%s' was started by the Python swarm and has no supervisor to type the beats: "+
			"respawn it with this swarm, or use the Python swarm's heartbeat", w.Name)
	}
	if !h.check(ctx, w).running {
		return fmt.Errorf("worker '%s' is not running", w.Name)
	}
	return nil
}

func heartbeatStart(c *ucli.Context, e *env) error {
	name, err := hbWorker(c)
	if err != nil {
		return err
	}
	h, s, err := load(e)
	if err != nil {
		return err
	}
	w := s.Get(name)
	if w == nil {
		return hbError(e, "worker '%s' not found", name)
	}
	if err := heartbeatFor(c.Context, h, w); err != nil {
		return hbError(e, "%v", err)
	}
	if old, err := h.loadHeartbeat(name); err == nil && old != nil && old.Live() && !c.Bool("force") {
		return hbError(e, "heartbeat already active for '%s' (use --force to replace)", name)
	}
	secs, expSecs, bad, badText := hbDurations(c.String("interval"), c.String("expire"))
	if bad != "" {
		return hbError(e, "invalid %s '%s'", bad, badText)
	}
	if secs < shortInterval {
		hbWarn(e, "very short interval (%s), consider using at least 1m", c.String("interval"))
	}
	hb := newHeartbeat(name, secs, expSecs, c.String("message"), time.Now())
	hb.MonitorPID = h.monitorOf(w)
	force := c.Bool("force")
	err = h.updateHeartbeat(c.Context, name, func(old *worker.Heartbeat) (*worker.Heartbeat, error) {
		if old != nil && old.Live() && !force {
			return nil, hbError(e, "heartbeat already active for '%s' (use --force to replace)", name)
		}
		return hb, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Heartbeat started for %s (%s)\n", name, heartbeatTerms(secs, expSecs))
	return nil
}

// heartbeatTerms is "every I, no expiration" or "every I, expires in E".
func heartbeatTerms(secs, expSecs int64) string {
	every := worker.FormatDuration(time.Duration(secs) * time.Second)
	if expSecs > 0 {
		return fmt.Sprintf("every %s, expires in %s", every, worker.FormatDuration(time.Duration(expSecs)*time.Second))
	}
	return fmt.Sprintf("every %s, no expiration", every)
}

// nextBeatWords is NEXT BEAT: "-" unless active, else when as time_until says it ("?" when the
// times cannot be read); next is its time for status --format json.
func nextBeatWords(hb *worker.Heartbeat, now time.Time) (words string, next *string) {
	if hb.Status != worker.HeartbeatActive {
		return "-", nil
	}
	t, ok := hb.NextBeat()
	if !ok {
		return "?", nil
	}
	iso := worker.HeartbeatTime(t)
	return worker.Until(t, now), &iso
}

func expiresWords(hb *worker.Heartbeat, now time.Time) string {
	if hb.ExpireAt == nil {
		return "never"
	}
	if t, ok := hb.Expires(); ok {
		return worker.Until(t, now)
	}
	return *hb.ExpireAt
}

func heartbeatList(c *ucli.Context, e *env) error {
	format := c.String("format")
	if err := choice("format", format, "table", "json"); err != nil {
		return err
	}
	if c.NArg() > 0 {
		return cli.Usagef("unrecognized arguments: %s", strings.Join(c.Args().Slice(), " "))
	}
	h, err := openHome(e)
	if err != nil {
		return err
	}
	hbs, err := h.listHeartbeats(func(m string) { e.warnf("%s: skipped", m) })
	if err != nil {
		return err
	}
	h.settleHeartbeats(c.Context, hbs)
	if len(hbs) == 0 {
		if format == "json" {
			fmt.Fprintln(e.stdout, "[]")
		} else {
			fmt.Fprintln(e.stdout, "No heartbeats found")
		}
		return nil
	}
	if format == "json" {
		fmt.Fprintf(e.stdout, "%s\n", worker.EncodeHeartbeats(hbs))
		return nil
	}
	now := time.Now()
	fmt.Fprintf(e.stdout, "%-15s %-10s %-12s %-12s %-10s %-6s\n", "WORKER", "INTERVAL", "NEXT BEAT", "EXPIRES", "STATUS", "BEATS")
	for _, hb := range hbs {
		next, _ := nextBeatWords(hb, now)
		fmt.Fprintf(e.stdout, "%-15s %-10s %-12s %-12s %-10s %-6d\n", hb.WorkerName,
			worker.FormatDuration(time.Duration(hb.IntervalSeconds)*time.Second), next, expiresWords(hb, now), hb.Status, hb.BeatCount)
	}
	return nil
}

func heartbeatStatus(c *ucli.Context, e *env) error {
	format := c.String("format")
	if err := choice("format", format, "text", "json"); err != nil {
		return err
	}
	name, h, err := hbHome(c, e)
	if err != nil {
		return err
	}
	hb, err := h.loadHeartbeat(name)
	if err != nil {
		return err
	}
	if hb == nil {
		fmt.Fprintf(e.stderr, "No heartbeat found for %s\n", name)
		return &cli.ExitError{Code: cli.ExitFailure}
	}
	h.settleHeartbeats(c.Context, []*worker.Heartbeat{hb})
	now := time.Now()
	next, nextISO := nextBeatWords(hb, now)
	if format == "json" {
		more := worker.Object{}.SetValue("next_beat_at", nextISO)
		fmt.Fprintf(e.stdout, "%s\n", worker.EncodeHeartbeatWith(hb, more))
		return nil
	}
	fmt.Fprintf(e.stdout, "Worker: %s\nStatus: %s\nInterval: %s\nMessage: %s\nCreated: %s\n", hb.WorkerName, hb.Status,
		worker.FormatDuration(time.Duration(hb.IntervalSeconds)*time.Second), hb.Message, hb.CreatedAt)
	if hb.ExpireAt != nil {
		fmt.Fprintf(e.stdout, "Expires: %s (%s)\n", *hb.ExpireAt, expiresWords(hb, now))
	} else {
		fmt.Fprintf(e.stdout, "Expires: never\n")
	}
	if hb.LastBeatAt != nil {
		fmt.Fprintf(e.stdout, "Last beat: %s\n", *hb.LastBeatAt)
	} else {
		fmt.Fprintf(e.stdout, "Last beat: none\n")
	}
	fmt.Fprintf(e.stdout, "Next beat: %s\nBeat count: %d\n", next, hb.BeatCount)
	return nil
}

// heartbeatFlip is pause (active → paused) and resume (paused → active).
func heartbeatFlip(c *ucli.Context, e *env, from, to, fromWord, done string) error {
	name, h, err := hbHome(c, e)
	if err != nil {
		return err
	}
	var status string
	found := false
	err = h.updateHeartbeat(c.Context, name, func(hb *worker.Heartbeat) (*worker.Heartbeat, error) {
		if hb == nil {
			return nil, nil
		}
		found, status = true, hb.Status
		if hb.Status != from {
			return nil, nil
		}
		hb.Status = to
		return hb, nil
	})
	switch {
	case err != nil:
		return err
	case !found:
		fmt.Fprintf(e.stderr, "No heartbeat found for %s\n", name)
		return &cli.ExitError{Code: cli.ExitFailure}
	case status != from:
		fmt.Fprintf(e.stderr, "Heartbeat for %s is not %s (status: %s)\n", name, fromWord, status)
		return &cli.ExitError{Code: cli.ExitFailure}
	}
	fmt.Fprintf(e.stdout, "Heartbeat %s for %s\n", done, name)
	return nil
}
