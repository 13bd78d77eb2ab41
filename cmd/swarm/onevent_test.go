package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// supervisorgone NAME: the worker's supervisor process has ended.
	scriptCmds["supervisorgone"] = func(ts *testscript.TestScript, neg bool, args []string) {
		sw, err := swarm.Open(ts.Getenv("SWARM_DIR"), swarm.Options{Warnings: os.Stderr})
		ts.Check(err)
		w, err := sw.Worker(args[0])
		ts.Check(err)
		var pid int
		if w == nil || !w.Meta(worker.MetaSupervisorPID, &pid) || pid <= 0 {
			ts.Fatalf("worker %s has no supervisor pid", args[0])
		}
		if alive(pid) {
			ts.Fatalf("the supervisor of %s (pid %d) is still there", args[0], pid)
		}
	}
	// [!] lastpidalive FILE: the process whose pid is FILE's last line is alive.
	scriptCmds["lastpidalive"] = func(ts *testscript.TestScript, neg bool, args []string) {
		lines := strings.Fields(ts.ReadFile(args[0]))
		if len(lines) == 0 {
			ts.Fatalf("no pid in %s", args[0])
		}
		pid, err := strconv.Atoi(lines[len(lines)-1])
		ts.Check(err)
		if alive(pid) == neg {
			ts.Fatalf("process %d alive: %v", pid, !neg)
		}
	}
}

// alive tells whether pid is a process that has not ended (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err == nil && syscall.Kill(pid, 0) == nil && !strings.Contains(string(b), ") Z ")
}
