package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
	ucli "github.com/urfave/cli/v2"
)

// The verbs that type into workers: send, interrupt, eof.

// sendOptions are send's flags.
type sendOptions struct{ noEnter, all, raw bool }

// AddFlags appends send's flags, each writing into o, to flags.
func (o *sendOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.BoolFlag{Name: "no-enter", Destination: &o.noEnter, Usage: "do not press Enter after the text"},
		&ucli.BoolFlag{Name: "all", Destination: &o.all, Usage: "every running worker"},
		&ucli.BoolFlag{Name: "raw", Destination: &o.raw, Usage: "no pre-clear (Escape, Ctrl-U) before the text"},
	)
}

func sendCommand() *cli.Command {
	var o sendOptions
	return &cli.Command{
		Name: "send", Operand: "workers", Usage: "type text into a worker", UsageText: "swarm send [NAME] TEXT [--no-enter] [--all] [--raw]",
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			var name, text string
			switch c.NArg() {
			case 0:
				return cli.Usagef("the following arguments are required: text")
			case 1:
				text = c.Args().First()
			default:
				name, text = c.Args().Get(0), c.Args().Get(1)
			}
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			ws, err := targets(ctx, o.all, sw, st, name, "worker name required when not using --all")
			if err != nil {
				return err
			}
			for _, w := range ws {
				if err := sw.Send(ctx, w, text, swarm.SendOptions{Raw: o.raw, NoEnter: o.noEnter}); err != nil {
					return fmt.Errorf("sending to '%s': %v", w.Name, err)
				}
				fmt.Fprintf(s.Out, "sent to %s\n", w.Name)
			}
			return nil
		},
	}
}

// targets returns the workers a verb with --all acts on (the running ones that can be typed
// into) or the one named.
func targets(ctx context.Context, all bool, sw *swarm.Swarm, st *worker.State, name string, noName string) ([]*worker.Worker, error) {
	if all {
		var ws []*worker.Worker
		for _, w := range st.Workers {
			if sw.Live(ctx, w).Running && (w.Supervised() || w.Tmux != nil) {
				ws = append(ws, w)
			}
		}
		return ws, nil
	}
	if name == "" {
		return nil, errors.New(noName)
	}
	w, err := one(st, name, 1)
	if err != nil {
		return nil, err
	}
	if !w.Supervised() && w.Tmux == nil {
		return nil, fmt.Errorf("worker '%s' is not a tmux worker", w.Name)
	}
	if !sw.Live(ctx, w).Running {
		return nil, fmt.Errorf("worker '%s' is not running", w.Name)
	}
	return []*worker.Worker{w}, nil
}

func interruptCommand() *cli.Command {
	var all bool // interrupt's one flag
	return &cli.Command{
		Name: "interrupt", Operand: "workers", Usage: "press Ctrl-C in a worker", UsageText: "swarm interrupt [NAME] [--all]",
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "all", Destination: &all, Usage: "every running worker"}},
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			ws, err := targets(ctx, all, sw, st, c.Args().First(), "worker name required when not using --all")
			if err != nil {
				return err
			}
			for _, w := range ws {
				sw.Keys(ctx, w, "interrupt") // errors ignored, as the Python swarm did
				fmt.Fprintf(s.Out, "interrupted %s\n", w.Name)
			}
			return nil
		},
	}
}

func eofCommand() *cli.Command {
	return &cli.Command{
		Name: "eof", Operand: "workers", Usage: "press Ctrl-D in a worker", UsageText: "swarm eof NAME",
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			if c.NArg() != 1 {
				return cli.Usagef("the following arguments are required: name")
			}
			sw, st, err := load(ctx, s)
			if err != nil {
				return err
			}
			ws, err := targets(ctx, false, sw, st, c.Args().First(), "")
			if err != nil {
				return err
			}
			sw.Keys(ctx, ws[0], "eof")
			fmt.Fprintf(s.Out, "sent eof to %s\n", ws[0].Name)
			return nil
		},
	}
}
