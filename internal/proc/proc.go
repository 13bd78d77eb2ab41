// Package proc answers, from kill(pid, 0) and /proc, whether a recorded pid is still the
// process that was recorded: a pid is reused once its process is gone, so the tools that
// signal or trust a pid from a state file (supervisors, loop monitors, AIWG's controllers)
// check the process's command line too. A leaf: it imports fsx only.
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

// StartTime is pid's start time in clock ticks after boot (/proc/PID/stat, field 22): with the
// pid, it names one process for good. ok is false where it cannot be read.
func StartTime(pid int) (ticks uint64, ok bool) {
	b, err := fsx.ReadFileLimit("/proc/"+strconv.Itoa(pid)+"/stat", 4096)
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(fields[19], 10, 64)
	return n, err == nil
}
