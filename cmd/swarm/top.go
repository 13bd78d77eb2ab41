package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentfleet/fleet/cmd/internal/swarmhost"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/top"
	"github.com/agentfleet/fleet/internal/top/ui"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// top: every agent on the machine, live (internal/top/ui) or once (--once).

// topOptions are top's flags.
type topOptions struct {
	once, json, bell        bool
	kind, status, tag, sort string
	stateDir, workspace     string
	recent, interval        time.Duration
	hosts                   string
	hostTimeout             time.Duration
	hostTimeoutGiven        bool
}

// AddFlags appends top's flags, each writing into o, to flags.
func (o *topOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.BoolFlag{Name: "once", Destination: &o.once, Usage: "print the rows once and exit (no terminal UI)"},
		&ucli.BoolFlag{Name: "json", Destination: &o.json, Usage: "with --once: the rows as a JSON array"},
		choiceFlag(ucli.StringFlag{Name: "kind", Destination: &o.kind, Usage: "only this kind (`K`): dispatch, worker, loop, task"}, topKinds()...),
		&ucli.StringFlag{Name: "status", Destination: &o.status, Usage: "only this status (`S`: running, stopped, done, failed, paused, ...; live, ended)"},
		&ucli.StringFlag{Name: "tag", Destination: &o.tag, Usage: "only agents with this tag (`T`)"},
		choiceFlag(ucli.StringFlag{Name: "sort", Value: "kind", Destination: &o.sort, Usage: "order (`KEY`): kind, name, status, age, activity, cost"}, top.SortKeys...),
		cli.StateDirFlagInto(&o.stateDir),
		&ucli.StringFlag{Name: "workspace", Destination: &o.workspace, Usage: "where AIWG loops and queue tasks are looked for (`DIR`; default: the git top of the current directory)"},
		&ucli.DurationFlag{Name: "recent", Value: time.Hour, Destination: &o.recent, Usage: "how long an ended agent stays listed (`DUR`)"},
		&ucli.BoolFlag{Name: "bell", Destination: &o.bell, Usage: "ring the terminal's bell once when an agent starts waiting for input (the UI)"},
		&ucli.StringFlag{Name: "hosts", Destination: &o.hosts, Usage: "show the agents of the hosts of `hosts.yaml` (as swarm run --hosts reads it) beside this machine's, over OpenSSH"},
		&ucli.DurationFlag{Name: "host-timeout", Value: 5 * time.Second, Destination: &o.hostTimeout, Action: cli.Given[time.Duration](&o.hostTimeoutGiven),
			Usage: "with --hosts: a host that has not answered within `DUR` is marked offline"},
		&ucli.DurationFlag{Name: "interval", Value: time.Second, Destination: &o.interval, Usage: "how often the UI reads the live agents' screens (`DUR`; every row is read again when a state file changes, and every 10 intervals)"},
	)
}

func topCommand() *cli.Command {
	var o topOptions
	return &cli.Command{
		Name: "top", Usage: "every agent (dispatched beads, workers, loops, queue tasks), live",
		UsageText: "swarm top [--once [--json]] [--kind K] [--status S] [--tag T] [--sort KEY] [--state-dir DIR] [--workspace DIR] [--recent DUR] [--bell] [--hosts hosts.yaml [--host-timeout DUR]] [TEXT]",
		Flags:     o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() > 1 {
				return cli.Usagef("at most one TEXT to look for")
			}
			if o.json && !o.once {
				return cli.Usagef("--json goes with --once")
			}
			src, err := topSources(&o, s)
			if err != nil {
				return err
			}
			if src.Hosts, err = watchHosts(ctx, &o); err != nil {
				return err
			}
			if src.Hosts != nil {
				defer src.Hosts.Close()
			}
			m, err := top.Open(src)
			if err != nil {
				return err
			}
			f := top.Filter{Kind: top.Kind(o.kind), Status: o.status, Tag: o.tag, Text: c.Args().First()}
			if !o.once {
				in, ok := s.In.(*os.File)
				if !ok || !term.IsTerminal(int(in.Fd())) {
					return fmt.Errorf("swarm top needs a terminal (for scripts: swarm top --once [--json])")
				}
				return ui.Run(ctx, m, ui.Options{Filter: f, Sort: o.sort, Interval: o.interval,
					In: in, Out: s.Out, NoColor: os.Getenv("NO_COLOR") != "", Environ: os.Environ(), Bell: o.bell})
			}
			rows, err := m.Refresh(ctx)
			if err != nil {
				return err
			}
			rows = f.Apply(rows)
			top.Sort(rows, o.sort)
			for _, h := range m.Hosts() {
				if !h.Online {
					fmt.Fprintf(s.Err, "swarm: top: host %s is offline (%s): %s\n", h.Name, h.Seen(time.Now()), h.Error)
				}
			}
			if o.json {
				if rows == nil {
					rows = []*top.Row{}
				}
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			if len(rows) == 0 {
				return nil
			}
			now := time.Now()
			table := [][]string{top.Columns}
			if src.Hosts != nil {
				table[0] = top.HostColumns
			}
			for _, r := range rows {
				if src.Hosts != nil {
					table = append(table, r.HostCells(now))
				} else {
					table = append(table, r.Cells(now))
				}
			}
			cli.Table(s.Out, table)
			return nil
		},
	}
}

// topSources: where top looks, from the environment and the flags (internal/top's comment).
func topSources(o *topOptions, s cli.Streams) (top.Sources, error) {
	dir, err := swarmDir()
	if err != nil {
		return top.Sources{}, err
	}
	ws := o.workspace
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return top.Sources{}, err
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return top.Sources{}, err
	}
	src := top.Sources{SwarmDir: dir, StateDir: o.stateDir, Workspace: ws, Recent: o.recent,
		Swarm: swarmhost.Options(dir, s.Err)}
	src.Loops = loop.Options{Tool: "swarm ralph", Err: s.Err}
	if exe, err := proc.Self(); err == nil {
		src.Loops.Monitor = []string{exe, "ralph", "run"}
	}
	return src, nil
}

// topKinds are top's kinds, as --kind takes them.
func topKinds() []string {
	var out []string
	for _, k := range top.Kinds {
		out = append(out, string(k))
	}
	return out
}

// watchHosts starts polling the hosts of --hosts (nil without it). A bad hosts file is one line
// and exit 2, as for swarm run --hosts.
func watchHosts(ctx context.Context, o *topOptions) (*top.Hosts, error) {
	if o.hosts == "" {
		if o.hostTimeoutGiven {
			return nil, cli.Usagef("--host-timeout goes with --hosts")
		}
		return nil, nil
	}
	if o.hostTimeout <= 0 {
		return nil, cli.Usagef("--host-timeout must be positive")
	}
	home, _ := os.UserHomeDir()
	hosts, err := remote.ParseHosts(o.hosts, home)
	if err != nil {
		return nil, usage2(err)
	}
	var hs []*remote.Host
	for i := range hosts.Hosts {
		hs = append(hs, &hosts.Hosts[i])
	}
	return top.WatchHosts(ctx, hs, top.HostOptions{Every: o.interval, Timeout: o.hostTimeout})
}

// agentsCommand is the hidden verb a host answers swarm top --hosts with (top.AgentsVerb):
// this machine's agents as one JSON document, at most top.MaxHostRows of them.
func agentsCommand() *cli.Command {
	var o topOptions
	return &cli.Command{
		Name: top.AgentsVerb, Usage: "this machine's agents as JSON, for swarm top --hosts", Hidden: true,
		UsageText: "swarm " + top.AgentsVerb + " [--state-dir DIR] [--workspace DIR]",
		Flags: []ucli.Flag{
			cli.StateDirFlagInto(&o.stateDir),
			&ucli.StringFlag{Name: "workspace", Destination: &o.workspace, Usage: "where AIWG loops and queue tasks are looked for (`DIR`)"},
			&ucli.DurationFlag{Name: "recent", Value: time.Hour, Destination: &o.recent, Usage: "how long an ended agent stays listed (`DUR`)"},
		},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() > 0 {
				return cli.Usagef("no operands")
			}
			src, err := topSources(&o, s)
			if err != nil {
				return err
			}
			return top.Answer(ctx, src, s.Out)
		},
	}
}

// actCommand is the hidden verb a host carries out an action of swarm top --hosts with
// (top.ActVerb): the row named, acted on as swarm top acts on this machine's; the text of send
// and the prompt of new on stdin; a refusal is the action's own one-line error, exit 1.
func actCommand() *cli.Command {
	var o topOptions
	var q top.ActRequest
	var kind string
	return &cli.Command{
		Name: top.ActVerb, Usage: "carry out an action of swarm top --hosts on an agent of this machine", Hidden: true,
		UsageText: "swarm " + top.ActVerb + " [--state-dir DIR] [--workspace DIR] --kind K [--source S] [--row-dir DIR] [--key KEY] -- ACTION NAME [NEW]",
		Flags: []ucli.Flag{
			cli.StateDirFlagInto(&o.stateDir),
			&ucli.StringFlag{Name: "workspace", Destination: &o.workspace, Usage: "where AIWG loops and queue tasks are looked for (`DIR`)"},
			&ucli.StringFlag{Name: "kind", Destination: &kind, Usage: "the agent's kind (`K`)"},
			&ucli.StringFlag{Name: "source", Destination: &q.Source, Usage: "the agent's source (`S`: swarm, aiwg, a plan)"},
			&ucli.StringFlag{Name: "row-dir", Destination: &q.StateDir, Usage: "the agent's state directory (`DIR`), as __agents said it"},
			&ucli.StringFlag{Name: "key", Destination: &q.Key, Usage: "the key of the key action (`KEY`: interrupt, eof, ...)"},
		},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() < 2 || c.NArg() > 3 {
				return cli.Usagef("ACTION NAME [NEW]: the action (%s) and the agent's name", strings.Join(top.Actions, ", "))
			}
			q.Action, q.Name, q.New, q.Kind = c.Args().Get(0), c.Args().Get(1), c.Args().Get(2), top.Kind(kind)
			if err := q.Check(); err != nil {
				return cli.Usagef("%v", err)
			}
			if q.Action == top.ActSend || q.Action == top.ActNew {
				text, err := top.ReadActText(s.In)
				if err != nil {
					return err
				}
				q.Text = text
			}
			src, err := topSources(&o, s)
			if err != nil {
				return err
			}
			return top.Act(ctx, src, q, s.Out)
		},
	}
}
