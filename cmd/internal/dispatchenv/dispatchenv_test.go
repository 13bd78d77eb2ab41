package dispatchenv

import (
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/remote"
)

// Unset or empty numbers are their defaults; a bad one is a usage error naming it, returned only
// by the setting itself, so that a program is not stopped by a setting it does not use.
func TestRead(t *testing.T) {
	env := map[string]string{"DISPATCH_KILL_GRACE": "3", "DISPATCH_MAX_RETRIES": "0", "DISPATCH_MIN_FREE_MB": "",
		"DISPATCH_HOST_OFFLINE": "soon", "DISPATCH_BACKEND": "process"}
	s := Read(func(name string) string { return env[name] })
	if d, err := s.KillGrace.Seconds(); err != nil || d != 3*time.Second {
		t.Errorf("KillGrace = %v, %v; want 3s", d, err)
	}
	if n, err := s.MinFreeMB.Int(); err != nil || n != 100 {
		t.Errorf("MinFreeMB = %d, %v; want the default 100", n, err)
	}
	if d, err := s.WatchTimeout.Seconds(); err != nil || d != time.Hour {
		t.Errorf("WatchTimeout = %v, %v; want the default 1h", d, err)
	}
	var usage *cli.UsageError
	if _, err := s.MaxRetries.Int(); !errors.As(err, &usage) || err.Error() != `DISPATCH_MAX_RETRIES="0" must be a positive integer` {
		t.Errorf("MaxRetries error = %v", err)
	}
	if _, err := s.HostOffline.Seconds(); !errors.As(err, &usage) || err.Error() != `DISPATCH_HOST_OFFLINE="soon" must be a positive integer` {
		t.Errorf("HostOffline error = %v", err)
	}
	if s.Backend != "process" || s.TmuxSocket != "" {
		t.Errorf("Backend, TmuxSocket = %q, %q", s.Backend, s.TmuxSocket)
	}
}

// A host's kill grace is its env's DISPATCH_KILL_GRACE, 10 s when unset or bad (its dispatch
// refuses a bad one itself).
func TestHostKillGrace(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 10 * time.Second, "1": time.Second, "0": 10 * time.Second, "soon": 10 * time.Second} {
		h := &remote.Host{Env: map[string]string{"DISPATCH_KILL_GRACE": v}}
		if v == "" {
			h.Env = nil
		}
		if got := HostKillGrace(h); got != want {
			t.Errorf("DISPATCH_KILL_GRACE=%q: %s, want %s", v, got, want)
		}
	}
}
