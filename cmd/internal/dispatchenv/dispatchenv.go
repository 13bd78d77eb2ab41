// Package dispatchenv is dispatch's DISPATCH_* settings, read in one place for the programs
// that honour them (dispatch, and swarm run, ralph queue run and validate-state, which take
// dispatch's numbers as dispatch reads them). The libraries read none: a main reads Settings
// once and passes the values down.
package dispatchenv

import (
	"strconv"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/remote"
)

// Settings are the DISPATCH_* variables, each with dispatch.sh's default. A number is checked
// when it is read but its error is only returned by Int or Seconds, so that a program fails
// on a bad value of a setting it uses, never on one it does not.
type Settings struct {
	MaxRetries    Number // DISPATCH_MAX_RETRIES (2): attempts of a bead
	WatchInterval Number // DISPATCH_WATCH_INTERVAL (20 s): accepted, nothing is polled
	WatchTimeout  Number // DISPATCH_WATCH_TIMEOUT (3600 s): an attempt's time
	KillGrace     Number // DISPATCH_KILL_GRACE (10 s) between TERM and KILL
	MinFreeMB     Number // DISPATCH_MIN_FREE_MB (100): the disk an attempt needs
	HostOffline   Number // DISPATCH_HOST_OFFLINE (30 s): a host silent this long is offline

	TmuxSocket  string // DISPATCH_TMUX_SOCKET
	Force       string // DISPATCH_FORCE
	Backend     string // DISPATCH_BACKEND: tmux or process
	UseRelay    string // DISPATCH_USE_RELAY: true or false
	RelayBin    string // DISPATCH_RELAY_BIN
	CodexEffort string // DISPATCH_CODEX_REASONING_EFFORT
	Hosts       string // DISPATCH_HOSTS: the hosts file
}

// Number is a numeric setting: a positive integer when set, its default when unset or empty.
type Number struct {
	n   int
	err error
}

// Int is the number, or the usage error that names the variable and its bad value.
func (n Number) Int() (int, error) { return n.n, n.err }

// Seconds is the number as a duration in seconds.
func (n Number) Seconds() (time.Duration, error) { return time.Duration(n.n) * time.Second, n.err }

// Read reads the settings from getenv (os.Getenv).
func Read(getenv func(string) string) Settings {
	num := func(name string, def int) Number {
		v := getenv(name)
		if v == "" {
			return Number{n: def}
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			// As dispatch.sh required of its DISPATCH_* numbers.
			return Number{err: cli.Usagef("%s=%q must be a positive integer", name, v)}
		}
		return Number{n: n}
	}
	return Settings{
		MaxRetries: num("DISPATCH_MAX_RETRIES", 2), WatchInterval: num("DISPATCH_WATCH_INTERVAL", 20),
		WatchTimeout: num("DISPATCH_WATCH_TIMEOUT", 3600), KillGrace: num("DISPATCH_KILL_GRACE", 10),
		MinFreeMB: num("DISPATCH_MIN_FREE_MB", 100), HostOffline: num("DISPATCH_HOST_OFFLINE", 30),
		TmuxSocket: getenv("DISPATCH_TMUX_SOCKET"), Force: getenv("DISPATCH_FORCE"), Backend: getenv("DISPATCH_BACKEND"),
		UseRelay: getenv("DISPATCH_USE_RELAY"), RelayBin: getenv("DISPATCH_RELAY_BIN"),
		CodexEffort: getenv("DISPATCH_CODEX_REASONING_EFFORT"), Hosts: getenv("DISPATCH_HOSTS"),
	}
}

// HostKillGrace is a host's kill grace, its env's DISPATCH_KILL_GRACE as the host's dispatch
// reads it (hosts.yaml's env is that dispatch's environment), 10 s when unset. A bad value is
// the default here: the host's dispatch refuses it itself, with its own message, at the
// attempt's start.
func HostKillGrace(h *remote.Host) time.Duration {
	grace, err := Read(func(name string) string { return h.Env[name] }).KillGrace.Seconds()
	if err != nil {
		return 10 * time.Second
	}
	return grace
}
