package proc

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A process that called setsid, or forked twice, is in no process group of ours and, once its
// parent is gone, a child of PID 1: no kill of a group and no walk of the parent links finds
// it. What it keeps is its environment, inherited through fork, setsid and exec. So whoever must
// end everything a run started (a ralph hook's run; a test binary's, tools/testprogress's) puts
// a mark of its own in the run's environment and, at the end, kills every process whose
// environment holds it (KillMarked). A process that clears its environment (env -i, sudo) or is
// started by another service escapes.

// Marked is a process KillMarked killed.
type Marked struct {
	PID     int
	Command string // its command line, spaces between the arguments, cut at 200 bytes
}

func (m Marked) String() string { return strconv.Itoa(m.PID) + " " + m.Command }

// maxEnviron bounds the read of a process's environment.
const maxEnviron = 1 << 20

// KillMarked SIGKILLs every process of this user but this one whose environment holds an
// entry (VAR=value) for which holds is true, and returns them. Each is held by a pidfd while
// its environment is read and it is signalled, so a pid reused meanwhile is never signalled.
// It looks again until a pass finds none (a process may fork between the look and the kill),
// at most passes times; a process killed is not looked at again. Killed is not yet gone:
// it ends when the kernel next schedules it.
func KillMarked(holds func(entry []byte) bool, passes int) []Marked {
	var killed []Marked
	done := map[int]bool{}
	for pass := 0; pass < passes; pass++ {
		found := killPass(holds, done)
		if len(found) == 0 {
			break
		}
		for _, p := range found {
			done[p.PID] = true
		}
		killed = append(killed, found...)
	}
	return killed
}

func killPass(holds func([]byte) bool, done map[int]bool) []Marked {
	var killed []Marked
	for _, pid := range PIDs() {
		if pid <= 1 || done[pid] {
			continue
		}
		if p, ok := killIfMarked(pid, holds); ok {
			killed = append(killed, p)
		}
	}
	return killed
}

// PIDs are the processes /proc lists but this one, in its order (os.ReadDir's, by name); none
// when it cannot be read. What finds a process by its command line or its environment walks it.
func PIDs() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killIfMarked kills pid if an entry of its environment holds; false when none does, or pid is
// gone or not ours to read.
func killIfMarked(pid int, holds func([]byte) bool) (Marked, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return Marked{}, false
	}
	defer unix.Close(fd)
	dir := "/proc/" + strconv.Itoa(pid)
	env := readStart(dir+"/environ", maxEnviron)
	if !anyEntry(env, holds) {
		return Marked{}, false
	}
	cmdline := readStart(dir+"/cmdline", 200)
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		return Marked{}, false
	}
	return Marked{PID: pid, Command: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))}, true
}

// anyEntry reports whether holds is true of one of env's NUL-separated entries.
func anyEntry(env []byte, holds func([]byte) bool) bool {
	for len(env) > 0 {
		var e []byte
		e, env, _ = bytes.Cut(env, []byte{0})
		if holds(e) {
			return true
		}
	}
	return false
}

// readStart is at most n bytes from the start of the file at path (a /proc file, whose size
// stat does not give); nil when it cannot be read. The mark is looked for in what was read.
func readStart(path string, n int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return b
}
