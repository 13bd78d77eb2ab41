// Package aiwg is AIWG's ralph loop as a library: a task run headless again and again until a
// completion command passes, with a registry of loops per workspace (.aiwg/ralph),
// checkpoints, and the seed's status transitions. cmd/ralph's start, status, pause, resume,
// abort, report and list verbs are its command line: they parse flags into StartSpec and
// ResumeSpec and call a Workspace's Start, Look, Pause, Resume, Abort, Report and List; the
// hidden "start __run ID" verb is a background controller's process, Workspace.RunLoop.
//
// Files (seed 003): .aiwg/ralph/registry.json (the active loops, at most MaxConcurrent unless
// forced), .aiwg/ralph/loops/<loop_id>/state.json (State, validated against the embedded
// loop-state schema on every write), checkpoints/iteration-NNN.json.gz, controller.log (a
// background controller's output). Each iteration is a dispatched attempt of bead
// <loop_id>-<i> in the loop's state directory (StartSpec.StateDir, else .aiwg/ralph/state),
// so its run and result records are dispatch's and analyze-runs reports them.
//
// The library reads none of its settings from its own process: the agents config, the
// command lines of its processes, their environment and where they report come in a Runtime.
package aiwg

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
)

var loopID = regexp.MustCompile(`^ralph-[a-z0-9-]*-[0-9a-f]{8}$`)

// IsLoopID tells an AIWG loop id (ralph-<slug>-<8 hex>) from a swarm loop's name.
func IsLoopID(s string) bool { return loopID.MatchString(s) }

// Runtime is what a loop's processes are given by the program that runs them (cmd/ralph):
// how an agent is found, how the loop's own processes are started, their environment, and
// where they report.
type Runtime struct {
	// Agent resolves a loop's agent as --agent gave it (AGENT[:MODEL]) to its profile and
	// model: when the loop starts, and again before each iteration (the agents config may
	// have changed meanwhile).
	Agent func(spec string) (*agent.Profile, agent.Model, error)
	// Controller is the command line of a loop's background controller (the program's hidden
	// "start __run" verb); the loop id is appended.
	Controller []string
	// Supervisor is the command line of the supervisor of an iteration whose records go to
	// stateDir (the hidden "start __supervise --state-dir DIR" verb); attempt.Launch appends
	// the handoff and the bead.
	Supervisor func(stateDir string) []string
	// Env is the environment of the controller, the agents and the completion command (each
	// iteration adds RALPH_LOOP_ID and RALPH_ITERATION).
	Env []string
	// Log receives the controller's lines: what each iteration came to.
	Log io.Writer
	// Warn receives warnings, one sentence each (a limit passed with --force).
	Warn func(msg string)
	// SealDir, when set, is a directory outside every workspace (cmd/ralph: $SWARM_DIR/aiwg)
	// where Start keeps each loop's completion command (seal.go): the agent works in the
	// workspace, where state.json is, and must not choose the command that judges it.
	SealDir string
	// Ask, when set, asks the person at the controller's terminal a yes-or-no question: an
	// --interactive loop asks it before each iteration after the first (askToGoOn). Only a
	// foreground controller has one.
	Ask func(question string) bool
	// Heartbeat is how often a controller whose iteration runs says it is alive in the
	// registry (its entry's last_active); 0: DefaultHeartbeat.
	Heartbeat time.Duration
}

// DefaultHeartbeat is how often a controller beats while its iteration runs.
const DefaultHeartbeat = 30 * time.Second

// heartbeat is rt.Heartbeat, DefaultHeartbeat when unset.
func (rt *Runtime) heartbeat() time.Duration {
	if rt.Heartbeat > 0 {
		return rt.Heartbeat
	}
	return DefaultHeartbeat
}

// agent is rt.Agent(spec), an error when there is no resolver.
func (rt *Runtime) agent(spec string) (*agent.Profile, agent.Model, error) {
	if rt.Agent == nil {
		return nil, agent.Model{}, errors.New("no agents config to find the loop's agent in")
	}
	return rt.Agent(spec)
}

// warn says msg through rt.Warn, if any.
func (rt *Runtime) warn(msg string) {
	if rt.Warn != nil {
		rt.Warn(msg)
	}
}

// log is where the controller's lines go.
func (rt *Runtime) log() io.Writer {
	if rt.Log == nil {
		return io.Discard
	}
	return rt.Log
}

// FindWorkspace is the workspace of dir, whose .aiwg/ralph holds the loops: the top of the git
// repository dir is in (the nearest directory with a .git, so a loop started from a
// subdirectory counts toward the same limit; found without running git, which would cost
// ralph status a few milliseconds), else dir itself, as AIWG used it.
func FindWorkspace(dir string) Workspace {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return Workspace{Root: d}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return Workspace{Root: dir}
		}
		d = parent
	}
}
