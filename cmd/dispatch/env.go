package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/fleet/cmd/internal/dispatchenv"
	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
)

// settings are dispatch's environment, read and checked once.
type settings struct {
	socket     string
	maxRetries int
	timeout    time.Duration
	killGrace  time.Duration
	minFreeMB  int64
	force      bool
	backend    string
	// config is the agents config and who named it (agent.FindConfig).
	config agent.ConfigFile
	// workspace is the workspace a shim ran dispatch for (FLEET_WORKSPACE): its
	// config/agents.json, its scripts/ and its state/, as dispatch.sh had them. "" without one.
	workspace string
	// relay and relayBin are dispatch.sh's relay settings: DISPATCH_USE_RELAY (true) or
	// --relay/--no-relay, and DISPATCH_RELAY_BIN ($HOME/go/bin/relay).
	relay    bool
	relayBin string // "" when neither DISPATCH_RELAY_BIN nor HOME is set
	// relayAsked is set when the relay was asked for (--relay, DISPATCH_USE_RELAY=true) rather
	// than on by default: only then is a missing relay worth a line on every dispatch.
	relayAsked  bool
	stateDir    string // absolute
	effort      string
	getenv      func(string) string
	environment []string
	// env is the DISPATCH_* settings, read once; the host settings take theirs from it.
	env dispatchenv.Settings
}

const defaultSocket = "/tmp/openclaw-coding-agents.sock"

// workspaceEnv names the workspace a shim (scripts/shim.sh) runs dispatch for. The shims set it
// from where they are, whatever the caller's directory, as dispatch.sh found its workspace
// from its own path.
const workspaceEnv = agent.WorkspaceEnv

func loadSettings(stateDir string) (*settings, error) {
	s := &settings{getenv: os.Getenv, environment: os.Environ(), env: dispatchenv.Read(os.Getenv)}
	var err error
	if s.maxRetries, err = s.env.MaxRetries.Int(); err != nil {
		return nil, err
	}
	if _, err = s.env.WatchInterval.Int(); err != nil {
		return nil, err
	}
	if s.timeout, err = s.env.WatchTimeout.Seconds(); err != nil {
		return nil, err
	}
	if s.killGrace, err = s.env.KillGrace.Seconds(); err != nil {
		return nil, err
	}
	free, err := s.env.MinFreeMB.Int()
	if err != nil {
		return nil, err
	}
	s.minFreeMB = int64(free)
	s.socket = s.env.TmuxSocket
	if s.socket == "" {
		s.socket = defaultSocket
	}
	switch strings.ToLower(s.env.Force) {
	case "", "0", "false", "no":
	default:
		s.force = true
	}
	s.backend = supervise.BackendTmux
	switch b := s.env.Backend; b {
	case "", supervise.BackendTmux:
	case supervise.BackendProcess:
		s.backend = b
	default:
		return nil, cli.Usagef("DISPATCH_BACKEND=%q: use tmux or process", b)
	}
	s.workspace = os.Getenv(workspaceEnv)
	if s.config, err = agent.FindConfig(os.LookupEnv, ""); err != nil {
		if errors.Is(err, agent.ErrConfigEnvEmpty) {
			return nil, cli.Usagef("%v", err)
		}
		return nil, err
	}
	switch v := s.env.UseRelay; v {
	case "", "true":
		s.relay, s.relayAsked = true, v == "true"
	case "false":
	default:
		return nil, cli.Usagef("DISPATCH_USE_RELAY=%q: use true or false", v)
	}
	s.relayBin = s.env.RelayBin
	if home, err := os.UserHomeDir(); s.relayBin == "" && err == nil && filepath.IsAbs(home) {
		// Without HOME (cron's env -i, a service) there is no default: dispatch.sh's
		// $HOME/go/bin/relay became the relative /go/bin/relay, or go/bin/relay here.
		s.relayBin = filepath.Join(home, "go", "bin", "relay")
	}
	s.effort = s.env.CodexEffort
	if s.stateDir, err = filepath.Abs(stateDir); err != nil {
		return nil, err
	}
	return s, nil
}

// agents loads the agents config the settings name (agent.FindConfig's order). A config that
// must exist and does not, or any config that is not valid, is an error naming the file: never
// a silent fallback. Without a workspace or CONFIG_FILE, a missing ./config/agents.json leaves
// the built-in claude and codex.
func (s *settings) agents() (*agent.Config, error) {
	return s.config.LoadOrBuiltin()
}

// relayLine is dispatch.sh's console line about the relay, or "" for a relay that is on by
// default and not there: dispatch.sh said "requested but unavailable" on every dispatch of
// every machine without one; dispatch doctor says it once, and a dispatch only when the relay
// was asked for.
func (s *settings) relayLine() string {
	switch {
	case !s.relay:
		return "Relay: disabled (--no-relay)"
	case isExecutable(s.relayBin):
		return fmt.Sprintf("Relay: enabled (%s)", s.relayBin)
	case !s.relayAsked:
		return ""
	}
	return "Relay: " + relayUnavailable(s)
}

// relayUnavailable says why the relay cannot be used.
func relayUnavailable(s *settings) string {
	if s.relayBin == "" {
		return "requested but unavailable (no DISPATCH_RELAY_BIN, and HOME is not set)"
	}
	return fmt.Sprintf("requested but unavailable (%s)", s.relayBin)
}

// isExecutable is the shell's test -x for a file.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0
}

func (s *settings) layout() supervise.Layout { return supervise.Layout{Dir: s.stateDir} }

func (s *settings) dir() attempt.Dir {
	d := attempt.NewDir(s.stateDir)
	d.LegacyMaxRetries = s.maxRetries
	return d
}

// where says where bead's supervisor runs under these settings.
func (s *settings) where(bead string) attempt.Where {
	return attempt.Where{Backend: s.backend, Tmux: s.tmux(), Session: attempt.Session(bead), KillGrace: s.killGrace}
}

func (s *settings) tmux() *tmux.Client { return &tmux.Client{Socket: s.socket} }

// parseDuration reads --timeout: bare seconds, or a Go duration such as 90s, 30m or 1h30m.
func parseDuration(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return 0, cli.Usagef("--timeout %q: give seconds or a duration like 90s, 30m, 1h30m", v)
	}
	return d.Truncate(time.Second), nil
}
