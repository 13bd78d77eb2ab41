// Package proc is the processes of ours. It answers, from kill(pid, 0) and /proc, whether a
// recorded pid is still the process that was recorded: a pid is reused once its process is
// gone, so the tools that signal or trust a pid from a state file (supervisors, loop monitors,
// AIWG's controllers) check the process's command line or its start time too. And it starts
// this program again (start.go): Self, the one reading of os.Args[0], and StartDetached, the
// one detached start of a supervisor, a loop's monitor or a controller. A leaf: it imports fsx
// only.
package proc

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/fsx"
)

// maxCmdline bounds the read of /proc/PID/cmdline (a command line is far shorter; the bound is
// there because every read of a file goes through one).
const maxCmdline = 1 << 20

// Alive reports whether pid names a live process: kill(pid, 0) succeeds, or is refused for
// permission (the process is there, someone else's). A pid <= 0 is none.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Args is pid's command line from /proc/PID/cmdline, split at its NULs. The error is the read's
// (no such process, or no /proc).
func Args(pid int) ([]string, error) {
	b, err := fsx.ReadFileLimit("/proc/"+strconv.Itoa(pid)+"/cmdline", maxCmdline)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}

// Holds reports whether pid is alive (Alive) and its command line holds, for each list in
// words, one of that list's words as a whole argument: Holds(pid, []string{"run", "spawn"},
// []string{name}) is "a run or a spawn of name". Where the command line cannot be read (no
// /proc), the signal check is all there is, and a live pid is taken for the process.
func Holds(pid int, words ...[]string) bool {
	if !Alive(pid) {
		return false
	}
	args, err := Args(pid)
	if err != nil {
		return true
	}
	for _, alts := range words {
		found := false
		for _, a := range args {
			for _, w := range alts {
				found = found || a == w
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Stat is what the toolkit reads of a process's /proc/PID/stat.
type Stat struct {
	// State is the process's state letter (R, S, D, Z, ...): field 3.
	State byte
	// PPID is its parent's pid: field 4.
	PPID int
	// TTY is its controlling terminal's device number, 0 for none: field 7.
	TTY int
	// Start is its start time in clock ticks after boot: field 22. With the pid, it names one
	// process for good.
	Start uint64
}

// maxStat bounds the read of /proc/PID/stat: 52 numbers and a command name of at most 64 bytes.
const maxStat = 4096

// ReadStat reads pid's /proc/PID/stat. ok is false where it cannot be read (no such process,
// no /proc) or does not read as one.
func ReadStat(pid int) (st Stat, ok bool) {
	b, err := fsx.ReadFileLimit("/proc/"+strconv.Itoa(pid)+"/stat", maxStat)
	if err != nil {
		return Stat{}, false
	}
	// The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 || len(fields[0]) != 1 {
		return Stat{}, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return Stat{}, false
	}
	tty, err := strconv.Atoi(fields[4])
	if err != nil {
		return Stat{}, false
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return Stat{}, false
	}
	return Stat{State: fields[0][0], PPID: ppid, TTY: tty, Start: start}, true
}

// StartTime is pid's start time in clock ticks after boot (ReadStat's Start): with the pid, it
// names one process for good. ok is false where it cannot be read.
func StartTime(pid int) (ticks uint64, ok bool) {
	st, ok := ReadStat(pid)
	return st.Start, ok
}
