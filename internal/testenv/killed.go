package testenv

import (
	"os"
	"testing"
)

// KilledEnv is the environment for a process the test will SIGKILL: this one's, with TMPDIR
// a short directory of the test's own (a unix socket's path must stay under 108 bytes), removed
// when the test ends. What the killed process cannot remove (the ssh dialer's directory of
// control sockets) goes with it, not into /tmp for good.
func KilledEnv(t testing.TB) []string {
	dir, err := os.MkdirTemp("", "k")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return append(os.Environ(), "TMPDIR="+dir)
}
