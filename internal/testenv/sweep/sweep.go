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
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
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

// Proc is a process a sweep found.
type Proc struct {
	PID     int
	Command string // its command line, spaces between the arguments, cut at 200 bytes
}

func (p Proc) String() string { return fmt.Sprintf("%d %s", p.PID, p.Command) }

// environBound is how much of a process's environment is read: the mark is looked for there.
const environBound = 1 << 20

// Kill SIGKILLs every process of this user, but this one, whose environment holds Var=mark or
// a mark below it, and returns them. A process is held by a pidfd while its environment is
// read and it is signalled, so a pid reused meanwhile is never signalled. It sweeps until a
// pass finds none (a process forked during a pass is found by the next), at most 5 passes; a
// process killed is not looked at again (it may take a moment to end).
func Kill(mark string) []Proc {
	if mark == "" {
		return nil
	}
	var killed []Proc
	done := map[int]bool{}
	for pass := 0; pass < 5; pass++ {
		found := killPass(mark, done)
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

func killPass(mark string, done map[int]bool) []Proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var killed []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == os.Getpid() || done[pid] {
			continue
		}
		if p, ok := killIfMarked(pid, mark); ok {
			killed = append(killed, p)
		}
	}
	return killed
}

// killIfMarked kills pid if its environment holds the mark; false when it does not, is gone,
// or is not ours to read.
func killIfMarked(pid int, mark string) (Proc, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return Proc{}, false
	}
	defer unix.Close(fd)
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	if !marked(read(filepath.Join(dir, "environ"), environBound), mark) {
		return Proc{}, false
	}
	cmd := strings.TrimSpace(strings.ReplaceAll(string(read(filepath.Join(dir, "cmdline"), 200)), "\x00", " "))
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		return Proc{}, false
	}
	return Proc{PID: pid, Command: cmd}, true
}

// marked reports whether the environment (NUL-separated VAR=value) holds Var=mark or a mark
// below it (Var=mark/...).
func marked(environ []byte, mark string) bool {
	want := Var + "=" + mark
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if s := string(kv); s == want || strings.HasPrefix(s, want+"/") {
			return true
		}
	}
	return false
}

// read is at most n bytes of the file at path; nil when it cannot be read.
func read(path string, n int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return b
}
