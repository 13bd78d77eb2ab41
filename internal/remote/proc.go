package remote

import (
	"bytes"
	"os"
	"strconv"
	"syscall"

	"github.com/agentfleet/fleet/internal/proc"
)

// The processes of ssh we start are found by their command line: every one names its
// Dialer's private control socket directory (-o ControlPath=DIR/cN; a master titles itself
// "ssh: DIR/cN [mux]"), a path no other process names. A master daemonizes (-f), so it is not
// our child: /proc is how it is found again. Where there is no /proc (not Linux), a master is
// still asked to exit (ssh -O exit), and the kills are skipped.

// namesIn says whether process pid's command line holds one of names. False when the process
// is gone.
func namesIn(pid int, names ...string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	for _, s := range names {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// killIfNaming kills pid if its command line holds one of names: a pid recorded earlier may
// be another process's by now.
func killIfNaming(pid int, names ...string) {
	if pid > 0 && namesIn(pid, names...) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// killNaming kills every process of ours whose command line holds one of names.
func killNaming(names ...string) {
	for _, pid := range proc.PIDs() {
		killIfNaming(pid, names...)
	}
}
