package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/tmux"
)

// settings are dispatch's environment, read and checked once.
type settings struct {
	socket      string
	maxRetries  int
	timeout     time.Duration
	killGrace   time.Duration
	minFreeMB   int64
	force       bool
	backend     string
	configFile  string
	stateDir    string // absolute
	effort      string
	getenv      func(string) string
	environment []string
}

const defaultSocket = "/tmp/openclaw-coding-agents.sock"

func loadSettings(stateDir string) (*settings, error) {
	s := &settings{getenv: os.Getenv, environment: os.Environ()}
	var err error
	if s.maxRetries, err = cli.PositiveEnv("DISPATCH_MAX_RETRIES", 2); err != nil {
		return nil, err
	}
	if _, err = cli.PositiveEnv("DISPATCH_WATCH_INTERVAL", 20); err != nil {
		return nil, err
	}
	timeout, err := cli.PositiveEnv("DISPATCH_WATCH_TIMEOUT", 3600)
	if err != nil {
		return nil, err
	}
	s.timeout = time.Duration(timeout) * time.Second
	grace, err := cli.PositiveEnv("DISPATCH_KILL_GRACE", 10)
	if err != nil {
		return nil, err
	}
	s.killGrace = time.Duration(grace) * time.Second
	free, err := cli.PositiveEnv("DISPATCH_MIN_FREE_MB", 100)
	if err != nil {
		return nil, err
	}
	s.minFreeMB = int64(free)
	s.socket = os.Getenv("DISPATCH_TMUX_SOCKET")
	if s.socket == "" {
		s.socket = defaultSocket
	}
	switch strings.ToLower(os.Getenv("DISPATCH_FORCE")) {
	case "", "0", "false", "no":
	default:
		s.force = true
	}
	s.backend = supervise.BackendTmux
	switch b := os.Getenv("DISPATCH_BACKEND"); b {
	case "", supervise.BackendTmux:
	case supervise.BackendProcess:
		s.backend = b
	default:
		return nil, cli.Usagef("DISPATCH_BACKEND=%q: use tmux or process", b)
	}
	s.configFile = os.Getenv("CONFIG_FILE")
	if s.configFile == "" {
		s.configFile = filepath.Join("config", "agents.json")
	}
	s.effort = os.Getenv("DISPATCH_CODEX_REASONING_EFFORT")
	if s.stateDir, err = filepath.Abs(stateDir); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *settings) layout() supervise.Layout { return supervise.Layout{Dir: s.stateDir} }

func (s *settings) dir() attempt.Dir { return attempt.NewDir(s.stateDir) }

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

// self is the command line that runs this binary again (the supervisor verb). os.Args[0] is
// preferred to os.Executable, which resolves symlinks: a binary installed under another name,
// or a multi-call test binary, must be started by the name it was started with.
func self() (string, error) {
	arg0 := os.Args[0]
	if !strings.Contains(arg0, string(os.PathSeparator)) {
		if p, err := execLookPath(arg0); err == nil {
			arg0 = p
		} else {
			return os.Executable()
		}
	}
	p, err := filepath.Abs(arg0)
	if err != nil {
		return "", fmt.Errorf("finding this program: %w", err)
	}
	return p, nil
}
