package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// TestHostileStragglers (issue 9, item 8): an agent that leaves a daemon behind (started with
// setsid, so outside its process group, ignoring SIGTERM, with a child of its own) leaves
// nothing running once its attempt is recorded: the supervisor is the subreaper of whatever the
// agent starts, and stops it all (TERM, then KILL after the grace period). The record says how
// many processes were stopped, in output_summary (the records' schema has no field for it).
func TestHostileStragglers(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	for _, backend := range []string{"tmux", "process"} {
		t.Run(backend, func(t *testing.T) {
			bead := "s-" + backend
			args := []string{bead, h.repo, "hostile:m1", "DAEMON EXIT=0", "--wait"}
			if backend == "process" {
				args = append(args, "--no-tmux")
			}
			h.must(t, nil, args...)
			b, err := os.ReadFile(filepath.Join(h.dir, bead+".daemon"))
			if err != nil {
				t.Fatal(err)
			}
			daemon, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			h.waitGoneEntry(t, bead)
			if left := processesOf(bead); len(left) > 0 {
				t.Errorf("processes of %s's attempt still run after it: %v (the daemon was %d)", bead, left, daemon)
				for _, pid := range left {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			run, err := record.ReadRun(h.store().RunPath(bead))
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != record.StatusDone {
				t.Errorf("run status %s, want done: the stragglers do not change the agent's outcome", run.Status)
			}
			stoppedLine := regexp.MustCompile(`supervisor: stopped [0-9]+ process\(es\) the agent left behind`)
			if run.OutputSummary == nil || !stoppedLine.MatchString(*run.OutputSummary) {
				t.Errorf("output_summary %v does not say how many processes were stopped", run.OutputSummary)
			}
			if log, _ := os.ReadFile(h.statePath("logs", bead+".log")); !stoppedLine.Match(log) {
				t.Errorf("the log does not say how many processes were stopped:\n%s", log)
			}
		})
	}
}

// processesOf lists the live processes started for bead's attempt: those with
// DISPATCH_BEAD=<bead> in their environment (the agent's, which its descendants inherit).
func processesOf(bead string) []int {
	want := []byte("DISPATCH_BEAD=" + bead + "\x00")
	var pids []int
	// A process reaped a moment ago may still be listed: look twice.
	for try := 0; try < 2; try++ {
		pids = pids[:0]
		names, _ := filepath.Glob("/proc/[0-9]*/environ")
		for _, n := range names {
			env, err := os.ReadFile(n)
			if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
				continue
			}
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(n)))
			if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !bytes.Contains(st, []byte(") Z ")) {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return pids
}
