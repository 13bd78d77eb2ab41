package remote

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// The processes of ssh we start are found by their command line: every one names its
// Dialer's private control socket directory (-o ControlPath=DIR/cN; a master titles itself
// "ssh: DIR/cN [mux]"), a path no other process names. A master daemonizes (-f), so it is not
// our child: /proc is how it is found again. Where there is no /proc (not Linux), a master is
// still asked to exit (ssh -O exit), and the kills are skipped.

// namesIn says whether process pid's command line holds s. False when the process is gone.
func namesIn(pid int, s string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.Contains(b, []byte(s))
}

// killIfNaming kills pid if its command line names s: a pid recorded earlier may be another
// process's by now.
func killIfNaming(pid int, s string) {
	if pid > 0 && namesIn(pid, s) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// killNaming kills every process of ours whose command line names s.
func killNaming(s string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		killIfNaming(pid, s)
	}
}
