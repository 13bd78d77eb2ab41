package hook

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"time"

	"github.com/agentfleet/fleet/internal/proc"
)

// A hook's process group is killed when it ends, but a child that called setsid (or a daemon
// that forked twice and left the group) is not in the group any more, and once its parent is
// gone it is the child of PID 1: no kill of the group and no walk of the parent links finds it.
// What every such process keeps is its environment, inherited through fork, setsid and exec. So
// each run of a hook has a mark of its own in its environment (RALPH_HOOK_RUN_<random>=1), and
// when the hook ends every process of ours whose environment holds it is killed, again until
// none is left. This needs no privilege (a subreaper would need a helper process of our own
// binary in every program and test that runs a hook; a PID namespace or a cgroup, privileges
// or delegation). What it does not catch: a process that drops or rewrites its environment
// (env -i, sudo) or is started by another service (systemd-run, at): the hook's author chose
// that.

// markVar begins the environment variable that marks a hook's run: RALPH_HOOK_RUN_<random>=1.
// The random part is in the name, so that a hook run by a process another hook started (a
// ralph loop a hook launched) adds its own mark beside the one it inherited, and each sweep
// finds its own.
const markVar = "RALPH_HOOK_RUN_"

// newMark is a run's mark: 128 random bits, so no other process holds it by chance.
func newMark() string {
	var b [16]byte
	rand.Read(b[:])
	return markVar + hex.EncodeToString(b[:]) + "=1"
}

// markedEnv is env (nil: this process's) with the mark first, where a bounded read of a
// process's environment finds it soonest (a shell that execs a program passes its variables in
// its own order, so every entry read is looked at all the same).
func markedEnv(env []string, mark string) []string {
	if env == nil {
		env = os.Environ()
	}
	return append([]string{mark}, env...)
}

// killSettle bounds how long killLeftBehind waits for the killed to be gone: a process stuck
// in the kernel dies only when the kernel lets it, and the caller's next event must not wait
// for that.
const killSettle = 5 * time.Second

// killLeftBehind kills every process whose environment holds mark (proc.KillMarked), and waits
// until the killed are gone: once the hook's run has ended, nothing it started is left.
func killLeftBehind(mark string) {
	want := []byte(mark)
	killed := proc.KillMarked(func(entry []byte) bool { return bytes.Equal(entry, want) }, 50)
	for deadline := time.Now().Add(killSettle); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !anyAlive(killed) {
			return
		}
	}
}

// anyAlive reports whether one of ps has not ended yet (a zombie has: it waits for its parent).
func anyAlive(ps []proc.Marked) bool {
	for _, p := range ps {
		if st, ok := proc.ReadStat(p.PID); ok && st.State != 'Z' {
			return true
		}
	}
	return false
}
