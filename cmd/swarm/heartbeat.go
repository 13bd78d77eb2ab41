package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

// The heartbeat verbs only edit $SWARM_DIR/heartbeats/<worker>.json (the library's Heartbeat
// calls); the beats are typed by the worker's own supervisor. Their messages are the Python
// swarm's ("Error: ...", "Warning: ..."), not swarm's usual "swarm: error: ...".

func heartbeatCommand() *cli.Command {
	verbs := []*cli.Command{heartbeatStartCommand(), heartbeatStopCommand(), heartbeatListCommand(), heartbeatStatusCommand(),
		heartbeatPauseCommand(), heartbeatResumeCommand()}
	return &cli.Command{
		Name: "heartbeat", Usage: "type a message into an idle worker on a schedule", UsageText: heartbeatSynopsis,
		Commands: verbs, CommandsUsage: func(w io.Writer) { heartbeatUsage(w, verbs) },
		UnknownVerb: func(word string, _ []string) error {
			if word == "" {
				return cli.Usagef("the following arguments are required: heartbeat_command (start, stop, list, ls, status, pause, resume)")
			}
			return cli.Usagef("argument heartbeat_command: invalid choice: '%s' (choose from 'start', 'stop', 'list', 'status', 'pause', 'resume', 'ls')", word)
		},
	}
}

const heartbeatSynopsis = "swarm heartbeat start WORKER --interval DUR [--expire DUR] [--message M] [--force]\n" +
	"   swarm heartbeat stop|status|pause|resume WORKER\n   swarm heartbeat list|ls [--format table|json]"

func heartbeatUsage(w io.Writer, verbs []*cli.Command) {
	fmt.Fprintf(w, "Usage:\n   %s\n\n", heartbeatSynopsis)
	for _, c := range verbs {
		fmt.Fprintf(w, "   %-8s %s\n", c.Name, c.Usage)
	}
	fmt.Fprintf(w, "\n'swarm heartbeat <verb> --help' shows a verb's options.\n")
}

// hbError is a heartbeat verb's error as the Python swarm printed it: "Error: ..." on stderr,
// exit 1.
func hbError(s cli.Streams, format string, args ...any) error {
	fmt.Fprintf(s.Err, "Error: "+format+"\n", args...)
	return &cli.ExitError{Code: cli.ExitFailure}
}

func hbWarn(s cli.Streams, format string, args ...any) {
	fmt.Fprintf(s.Err, "Warning: "+format+"\n", args...)
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

// hbSwarm is the worker a heartbeat verb names (hbWorker) and the swarm it is in.
func hbSwarm(c *ucli.Context, s cli.Streams) (string, *swarm.Swarm, error) {
	name, err := hbWorker(c)
	if err != nil {
		return "", nil, err
	}
	sw, err := open(s)
	return name, sw, err
}

// heartbeatStartOptions are heartbeat start's flags; the durations as typed, read by the action.
type heartbeatStartOptions struct {
	interval, expire, message string
	force                     bool
}

// AddFlags appends heartbeat start's flags, each writing into o, to flags.
func (o *heartbeatStartOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.StringFlag{Name: "interval", Required: true, Destination: &o.interval, Usage: "time between beats (`DUR`: 4h, 30m, 90s, 1h30m, bare seconds)"},
		&ucli.StringFlag{Name: "expire", Destination: &o.expire, Usage: "stop after `DUR` (default: never)"},
		&ucli.StringFlag{Name: "message", Value: "continue", Destination: &o.message, Usage: "the text typed on each beat (`M`), then Enter"},
		&ucli.BoolFlag{Name: "force", Destination: &o.force, Usage: "replace an active or paused heartbeat"},
	)
}

func heartbeatStartCommand() *cli.Command {
	var o heartbeatStartOptions
	return &cli.Command{
		Name: "start", Operand: "workers", Usage: "start a heartbeat for a worker",
		UsageText: "swarm heartbeat start WORKER --interval DUR [--expire DUR] [--message M] [--force]",
		Flags:     o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			name, err := hbWorker(c)
			if err != nil {
				return err
			}
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			w := st.Get(name)
			if w == nil {
				return hbError(s, "worker '%s' not found", name)
			}
			if err := sw.CanBeat(ctx, w); err != nil {
				return hbError(s, "%v", err)
			}
			force := o.force
			if old, err := sw.Heartbeat(name); err == nil && old != nil && old.Live() && !force {
				return hbError(s, "heartbeat already active for '%s' (use --force to replace)", name)
			}
			interval, err := worker.Duration(o.interval)
			if err != nil {
				return hbError(s, "invalid interval '%s'%s", o.interval, worker.DurationNote(err))
			}
			spec := swarm.HeartbeatSpec{Interval: interval, Message: o.message}
			if exp := o.expire; exp != "" {
				if spec.Expire, err = worker.Duration(exp); err != nil {
					return hbError(s, "invalid expire '%s'%s", exp, worker.DurationNote(err))
				}
			}
			if spec.Interval < swarm.ShortHeartbeat {
				hbWarn(s, "very short interval (%s), consider using at least 1m", o.interval)
			}
			hb := swarm.NewHeartbeat(name, spec, time.Now())
			hb.MonitorPID = sw.MonitorOf(w)
			err = sw.UpdateHeartbeat(ctx, name, func(old *worker.Heartbeat) (*worker.Heartbeat, error) {
				if old != nil && old.Live() && !force {
					return nil, hbError(s, "heartbeat already active for '%s' (use --force to replace)", name)
				}
				return hb, nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "Heartbeat started for %s (%s)\n", name, heartbeatTerms(spec.Interval, spec.Expire))
			return nil
		},
	}
}

func heartbeatStopCommand() *cli.Command {
	return &cli.Command{
		Name: "stop", Operand: "workers", Usage: "stop a worker's heartbeat (the file is kept)", UsageText: "swarm heartbeat stop WORKER",
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			name, sw, err := hbSwarm(c, s)
			if err != nil {
				return err
			}
			found := false
			err = sw.UpdateHeartbeat(ctx, name, func(hb *worker.Heartbeat) (*worker.Heartbeat, error) {
				if hb == nil {
					return nil, nil
				}
				// Nothing is signalled: the monitor (the worker's supervisor, or a Python swarm's
				// daemon) reads the status before every beat.
				found, hb.Status, hb.MonitorPID = true, worker.HeartbeatStopped, nil
				return hb, nil
			})
			if err != nil {
				return err
			}
			if !found {
				fmt.Fprintf(s.Out, "No active heartbeat for %s\n", name)
				return nil
			}
			fmt.Fprintf(s.Out, "Heartbeat stopped for %s\n", name)
			return nil
		},
	}
}

func heartbeatListCommand() *cli.Command {
	var format string // list's one flag
	return &cli.Command{
		Name: "list", Aliases: []string{"ls"}, Usage: "list heartbeats", UsageText: "swarm heartbeat list|ls [--format table|json]",
		Flags: []ucli.Flag{choiceFlag(ucli.StringFlag{Name: "format", Value: "table", Destination: &format, Usage: "table or json"}, "table", "json")},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() > 0 {
				return cli.Usagef("unrecognized arguments: %s", strings.Join(c.Args().Slice(), " "))
			}
			sw, err := open(s)
			if err != nil {
				return err
			}
			hbs, err := sw.Heartbeats(func(m string) { warnf(s, "%s: skipped", m) })
			if err != nil {
				return err
			}
			sw.SettleHeartbeats(ctx, hbs)
			if len(hbs) == 0 {
				if format == "json" {
					fmt.Fprintln(s.Out, "[]")
				} else {
					fmt.Fprintln(s.Out, "No heartbeats found")
				}
				return nil
			}
			if format == "json" {
				fmt.Fprintf(s.Out, "%s\n", worker.EncodeHeartbeats(hbs))
				return nil
			}
			now := time.Now()
			fmt.Fprintf(s.Out, "%-15s %-10s %-12s %-12s %-10s %-6s\n", "WORKER", "INTERVAL", "NEXT BEAT", "EXPIRES", "STATUS", "BEATS")
			for _, hb := range hbs {
				next, _ := nextBeatWords(hb, now)
				fmt.Fprintf(s.Out, "%-15s %-10s %-12s %-12s %-10s %-6d\n", hb.WorkerName,
					worker.FormatDuration(time.Duration(hb.IntervalSeconds)*time.Second), next, expiresWords(hb, now), hb.Status, hb.BeatCount)
			}
			return nil
		},
	}
}

func heartbeatStatusCommand() *cli.Command {
	var format string // status's one flag
	return &cli.Command{
		Name: "status", Operand: "workers", Usage: "show a worker's heartbeat", UsageText: "swarm heartbeat status WORKER [--format text|json]",
		Flags: []ucli.Flag{choiceFlag(ucli.StringFlag{Name: "format", Value: "text", Destination: &format, Usage: "text or json"}, "text", "json")},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			name, sw, err := hbSwarm(c, s)
			if err != nil {
				return err
			}
			hb, err := sw.Heartbeat(name)
			if err != nil {
				return err
			}
			if hb == nil {
				fmt.Fprintf(s.Err, "No heartbeat found for %s\n", name)
				return &cli.ExitError{Code: cli.ExitFailure}
			}
			sw.SettleHeartbeats(ctx, []*worker.Heartbeat{hb})
			now := time.Now()
			next, nextISO := nextBeatWords(hb, now)
			if format == "json" {
				more := worker.Object{}.SetValue("next_beat_at", nextISO)
				fmt.Fprintf(s.Out, "%s\n", worker.EncodeHeartbeatWith(hb, more))
				return nil
			}
			fmt.Fprintf(s.Out, "Worker: %s\nStatus: %s\nInterval: %s\nMessage: %s\nCreated: %s\n", hb.WorkerName, hb.Status,
				worker.FormatDuration(time.Duration(hb.IntervalSeconds)*time.Second), hb.Message, hb.CreatedAt)
			if hb.ExpireAt != nil {
				fmt.Fprintf(s.Out, "Expires: %s (%s)\n", *hb.ExpireAt, expiresWords(hb, now))
			} else {
				fmt.Fprintf(s.Out, "Expires: never\n")
			}
			if hb.LastBeatAt != nil {
				fmt.Fprintf(s.Out, "Last beat: %s\n", *hb.LastBeatAt)
			} else {
				fmt.Fprintf(s.Out, "Last beat: none\n")
			}
			fmt.Fprintf(s.Out, "Next beat: %s\nBeat count: %d\n", next, hb.BeatCount)
			return nil
		},
	}
}

func heartbeatPauseCommand() *cli.Command {
	return &cli.Command{
		Name: "pause", Operand: "workers", Usage: "pause a heartbeat", UsageText: "swarm heartbeat pause WORKER",
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			return heartbeatFlip(ctx, c, s, worker.HeartbeatActive, worker.HeartbeatPaused, "active", "paused")
		},
	}
}

func heartbeatResumeCommand() *cli.Command {
	return &cli.Command{
		Name: "resume", Operand: "workers", Usage: "resume a paused heartbeat", UsageText: "swarm heartbeat resume WORKER",
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			return heartbeatFlip(ctx, c, s, worker.HeartbeatPaused, worker.HeartbeatActive, "paused", "resumed")
		},
	}
}

// heartbeatFlip is pause (active → paused) and resume (paused → active).
func heartbeatFlip(ctx context.Context, c *ucli.Context, s cli.Streams, from, to, fromWord, done string) error {
	name, sw, err := hbSwarm(c, s)
	if err != nil {
		return err
	}
	var status string
	found := false
	err = sw.UpdateHeartbeat(ctx, name, func(hb *worker.Heartbeat) (*worker.Heartbeat, error) {
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
		fmt.Fprintf(s.Err, "No heartbeat found for %s\n", name)
		return &cli.ExitError{Code: cli.ExitFailure}
	case status != from:
		fmt.Fprintf(s.Err, "Heartbeat for %s is not %s (status: %s)\n", name, fromWord, status)
		return &cli.ExitError{Code: cli.ExitFailure}
	}
	fmt.Fprintf(s.Out, "Heartbeat %s for %s\n", done, name)
	return nil
}

// heartbeatTerms is "every I, no expiration" or "every I, expires in E".
func heartbeatTerms(interval, expire time.Duration) string {
	every := worker.FormatDuration(interval)
	if expire > 0 {
		return fmt.Sprintf("every %s, expires in %s", every, worker.FormatDuration(expire))
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
