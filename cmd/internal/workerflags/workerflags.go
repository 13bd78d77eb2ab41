// Package workerflags holds the flags that swarm spawn and a ralph loop's spawn (ralph spawn,
// swarm ralph spawn) share: where a worker's tmux window and worktree go, its tags and
// environment, how its readiness is told, its heartbeat. Each is defined once, with one help
// text, in small groups that each verb's options embed and whose AddFlags it calls where the
// group's flags stand in its help. The flags whose meaning differs between the verbs (--name,
// --tmux, --worktree, --cwd: a loop always runs in tmux, and in a worktree unless told not to)
// stay each verb's own.
package workerflags

import (
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	ucli "github.com/urfave/cli/v2"
)

// Tmux are --session and --tmux-socket.
type Tmux struct {
	Session     string
	Socket      string
	SocketGiven bool // an empty --tmux-socket is the default server named, not no socket
}

// AddFlags appends the tmux flags, each writing into o, to flags.
func (o *Tmux) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.StringFlag{Name: "session", Destination: &o.Session, Usage: "tmux session (`S`); default swarm-<hash of $SWARM_DIR>"},
		&ucli.StringFlag{Name: "tmux-socket", Destination: &o.Socket, Action: cli.Given[string](&o.SocketGiven),
			Usage: "tmux socket name (`K`, tmux -L); default tmux's default server"},
	)
}

// SocketName is --tmux-socket when it was given, else nil (tmux's default server).
func (o *Tmux) SocketName() *string {
	if !o.SocketGiven {
		return nil
	}
	k := o.Socket
	return &k
}

// Worktree are --branch and --worktree-dir.
type Worktree struct {
	Branch, Dir string
}

// AddFlags appends the worktree flags, each writing into o, to flags.
func (o *Worktree) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.StringFlag{Name: "branch", Destination: &o.Branch, Usage: "the worktree's branch (`B`); default the name"},
		&ucli.StringFlag{Name: "worktree-dir", Destination: &o.Dir, Usage: "where worktrees go (`D`; relative to the repository's parent)"},
	)
}

// Labels are --tag and --env, each repeatable.
type Labels struct {
	Tags, Env ucli.StringSlice
}

// AddFlags appends the label flags, each writing into o, to flags.
func (o *Labels) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.StringSliceFlag{Name: "tag", Destination: &o.Tags, Usage: "a tag (`T`), repeatable"},
		&ucli.StringSliceFlag{Name: "env", Destination: &o.Env, Usage: "an environment variable `K=V` for the command, repeatable"},
	)
}

// Ready are --ready-wait, --ready-timeout and --profile.
type Ready struct {
	Wait    bool
	Seconds int // --ready-timeout
	Profile string
}

// AddFlags appends the readiness flags, each writing into o, to flags.
func (o *Ready) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.BoolFlag{Name: "ready-wait", Destination: &o.Wait, Usage: "wait up to --ready-timeout for the agent's screen to show its profile's ready pattern"},
		&ucli.IntFlag{Name: "ready-timeout", Value: 120, Destination: &o.Seconds, Usage: "give up waiting after `S` seconds (spawn still succeeds)"},
		&ucli.StringFlag{Name: "profile", Destination: &o.Profile, Usage: "the agent profile (`P`) whose patterns tell its state (ready, busy, waiting, usage limits); default by the command"},
	)
}

// Timeout is --ready-timeout as a duration.
func (o *Ready) Timeout() time.Duration { return time.Duration(o.Seconds) * time.Second }

// Heartbeat are --heartbeat, --heartbeat-expire and --heartbeat-message, as typed: the verbs
// read the durations (swarm.ParseHeartbeat) before anything is made.
type Heartbeat struct {
	Every, Expire, Message string
}

// AddFlags appends the heartbeat flags, each writing into o, to flags.
func (o *Heartbeat) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.StringFlag{Name: "heartbeat", Destination: &o.Every, Usage: "start a heartbeat: type the message into the idle agent every `DUR` (swarm heartbeat)"},
		&ucli.StringFlag{Name: "heartbeat-expire", Destination: &o.Expire, Usage: "stop the heartbeat after `DUR` (default: never)"},
		&ucli.StringFlag{Name: "heartbeat-message", Value: "continue", Destination: &o.Message, Usage: "the heartbeat's message (`M`)"},
	)
}

// Options are all the shared groups, for a verb's options to embed.
type Options struct {
	Tmux      Tmux
	Worktree  Worktree
	Labels    Labels
	Ready     Ready
	Heartbeat Heartbeat
}
