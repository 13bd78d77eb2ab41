// Package sweep ends what tests started and left running, even when go test's timeout ends the
// test binary (it panics: no t.Cleanup runs, no deferred call). Tests start tmux servers and
// supervisors that detach from the test binary (a new session, a double fork): neither a
// process group nor the parent's death reaches them. What does is the environment: every
// process inherits it, and tmux hands its server's to the panes. So a run is marked by a
// variable, Var, and a sweep kills every process of ours whose environment carries the mark.
//
// Two sweeps use it: Guard, a test binary's TestMain, at its end and by a watchdog before go
// test's -timeout fires (then it prints every goroutine's stack first); and tools/testprogress
// (make test), once go test has ended, whatever ended the binaries. A process that clears its
// environment (testscript runs its commands in an environment of its own: testenv.Mark puts
// the mark there) escapes.
//
// No command imports it: it is for tests and tools/testprogress.
package sweep

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"

	"github.com/agentfleet/fleet/internal/proc"
)

// Var is the environment variable that marks a test run's processes: a mark, and below it,
// after a slash, the mark of each test binary (Guard), so that the binary's sweep leaves the
// other packages' processes alone and testprogress's takes them all.
const Var = "FLEET_TEST_MARK"

// NewMark is a fresh mark below parent ("" for none): parent/random.
func NewMark(parent string) string {
	b := make([]byte, 8)
	rand.Read(b)
	if parent == "" {
		return hex.EncodeToString(b)
	}
	return parent + "/" + hex.EncodeToString(b)
}

// Proc is a process a sweep killed.
type Proc = proc.Marked

// Kill SIGKILLs every process of this user, but this one, whose environment holds Var=mark or
// a mark below it (Var=mark/...), and returns them (proc.KillMarked: through a pidfd, passes
// until none is found, at most 5).
func Kill(mark string) []Proc {
	if mark == "" {
		return nil
	}
	want := []byte(Var + "=" + mark)
	return proc.KillMarked(func(entry []byte) bool {
		rest, ok := bytes.CutPrefix(entry, want)
		return ok && (len(rest) == 0 || rest[0] == '/')
	}, 5)
}
