// Command childtime runs a command and prints its wall time and the CPU time (user and
// system) of every process it started, detached ones included, as "WALL USER SYS" in
// seconds on stderr's last line. It is the benchmarks' /usr/bin/time: that one counts only the
// processes waited for, and swarm run's supervisors are detached (re-parented to PID 1, their
// CPU time counted nowhere), where GNU parallel's jobs are its children. Here this process is
// the child subreaper of the command, so every descendant that outlives its parent is
// re-parented here and reaped, and its time counted. The wall time ends when the command
// exits; the CPU time when its last descendant has.
//
//	childtime COMMAND [ARG...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: childtime COMMAND [ARG...]")
		os.Exit(2)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "childtime: becoming the subreaper:", err)
		os.Exit(1)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	code := 0
	if err != nil {
		code = 1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			fmt.Fprintln(os.Stderr, "childtime:", err)
		}
	}
	// The orphans re-parented here: waited for until none is left.
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, 0, nil); err == syscall.ECHILD {
			break
		}
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	fmt.Fprintf(os.Stderr, "childtime: %.3f %.3f %.3f\n", wall.Seconds(),
		time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds())
	os.Exit(code)
}
