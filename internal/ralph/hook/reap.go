package hook

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"strconv"
	"syscall"
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
// its own order, so leftBehind reads more than the first entry all the same).
func markedEnv(env []string, mark string) []string {
	if env == nil {
		env = os.Environ()
	}
	return append([]string{mark}, env...)
}

// maxEnviron bounds the read of a process's environment.
const maxEnviron = 1 << 20

// killSettle bounds how long killLeftBehind goes on: a process stuck in the kernel dies only
// when the kernel lets it, and the caller's next event must not wait for that.
const killSettle = 5 * time.Second

// killLeftBehind kills every live process whose environment holds mark, then looks again (a
// process may have forked between the look and the kill) until none is left.
func killLeftBehind(mark string) {
	for deadline := time.Now().Add(killSettle); time.Now().Before(deadline); {
		pids := marked(mark)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond) // the killed die when next scheduled
	}
}

// marked lists the live processes (zombies left out: they are dead, and their environment
// cannot be read) whose environment holds mark as one of its entries.
func marked(mark string) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	want := []byte(mark)
	self := os.Getpid()
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == self {
			continue
		}
		if env := environ(pid); env != nil && holds(env, want) {
			if st, ok := proc.ReadStat(pid); ok && st.State != 'Z' {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// environ is the start of pid's environment (NUL-separated entries), nil where it cannot be
// read (another user's process, one that ended).
func environ(pid int) []byte {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxEnviron))
	return b
}

// holds reports whether the NUL-separated entries of env include entry.
func holds(env, entry []byte) bool {
	for len(env) > 0 {
		var e []byte
		e, env, _ = bytes.Cut(env, []byte{0})
		if bytes.Equal(e, entry) {
			return true
		}
	}
	return false
}
