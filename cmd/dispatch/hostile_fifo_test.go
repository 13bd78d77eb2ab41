package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// TestHostileFIFOs (issue 9, item 2): a named pipe where a state file should be (opening one
// to read blocks until a writer comes, which never does) hangs nothing: dispatch, ps and
// reconcile read state files without blocking, regular files only.
func TestHostileFIFOs(t *testing.T) {
	t.Parallel()
	h := newHostile(t)

	// A FIFO in the registry, of a bead with nothing else: ps and reconcile neither hang nor
	// fail, and clear it away (it is no one's entry).
	t.Run("registry entry, alone", func(t *testing.T) {
		plantFIFO(t, h.statePath("supervisors", "f-alone.json"))
		for _, args := range [][]string{{"ps"}, {"ps", "--json"}, {"reconcile"}, {"reconcile", "--all"}} {
			if code, stdout, stderr := h.run(t, nil, args...); code != 0 {
				t.Errorf("dispatch %s with a FIFO in the registry: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
			}
		}
		if _, err := os.Lstat(h.statePath("supervisors", "f-alone.json")); !os.IsNotExist(err) {
			t.Errorf("the FIFO is still in the registry: %v", err)
		}
	})

	// A FIFO at the registry entry of the bead being dispatched.
	t.Run("registry entry of the bead", func(t *testing.T) {
		plantFIFO(t, h.statePath("supervisors", "f-entry.json"))
		h.must(t, nil, "f-entry", h.repo, "hostile:m1", "EXIT=0", "--wait")
		h.waitGoneEntry(t, "f-entry")
	})

	// A FIFO as the previous attempt's log: the next dispatch archives the records and starts
	// the attempt; a FIFO is no log to archive.
	t.Run("previous attempt's log", func(t *testing.T) {
		h.must(t, nil, "f-log", h.repo, "hostile:m1", "EXIT=0", "--wait")
		h.waitGoneEntry(t, "f-log")
		plantFIFO(t, h.statePath("logs", "f-log.log"))
		out := h.must(t, nil, "f-log", h.repo, "hostile:m1", "EXIT=0", "--wait")
		if !strings.Contains(out, "Attempt: 2/2") {
			t.Errorf("the second dispatch is not attempt 2:\n%s", out)
		}
		if run, err := record.ReadRun(h.statePath("attempts", "f-log", "run-1.json")); err != nil || run.Status != record.StatusDone {
			t.Errorf("attempt 1 archived as %+v, %v; want done", run, err)
		}
		if fi, err := os.Lstat(h.statePath("attempts", "f-log", "output-1.log")); err == nil && !fi.Mode().IsRegular() {
			t.Errorf("the FIFO was archived as attempt 1's output: %v", fi.Mode())
		}
		regular(t, h.statePath("logs", "f-log.log"), 0o600)
	})

	// A FIFO as Truthsayer's findings, which the supervisor counts for the wake message after
	// the records, and dispatch made fresh at the launch.
	t.Run("truthsayer log", func(t *testing.T) {
		bin := filepath.Join(h.dir, "truthsayer")
		os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 1000\n"), 0o755)
		ws := filepath.Join(h.dir, "ws")
		os.MkdirAll(filepath.Join(ws, "scripts"), 0o755)
		env := []string{"TRUTHSAYER_BIN=" + bin, "FLEET_WORKSPACE=" + ws, "STATE_DIR=" + h.state}
		plantFIFO(t, h.statePath("truthsayer", "f-truth.log"))
		h.must(t, env, "f-truth", h.repo, "hostile:m1", "EXIT=0", "--wait")
		h.waitGoneEntry(t, "f-truth")
		// The agent's log was made fresh, then the supervisor counted the findings: a FIFO
		// put there after the launch must not hang it either.
		plantFIFO(t, h.statePath("truthsayer", "f-truth.log"))
		h.must(t, env, "f-truth", h.repo, "hostile:m1", "WAITFOR=go-f-truth EXIT=0")
		h.waitAgent("f-truth", 30*time.Second)
		os.Remove(h.statePath("truthsayer", "f-truth.log"))
		plantFIFO(t, h.statePath("truthsayer", "f-truth.log"))
		os.WriteFile(filepath.Join(h.dir, "go-f-truth"), nil, 0o600)
		h.waitFinal("f-truth", 30*time.Second)
		h.waitGoneEntry(t, "f-truth")
	})

	// A FIFO given as CONFIG_FILE (issue 17): refused at once in one line, exit 1, nothing
	// recorded; dispatch.sh's jq waited for a writer for ever, and so did dispatch.
	t.Run("CONFIG_FILE", func(t *testing.T) {
		fifo := filepath.Join(h.dir, "agents-fifo.json")
		plantFIFO(t, fifo)
		code, stdout, stderr := h.run(t, []string{"CONFIG_FILE=" + fifo}, "f-config", h.repo, "hostile:m1", "EXIT=0")
		if code != 1 || !strings.Contains(stderr, "not a regular file") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("dispatch with a FIFO as CONFIG_FILE: exit %d, want 1 and one line saying it is not a regular file\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if _, err := os.Lstat(h.statePath("runs", "f-config.json")); !os.IsNotExist(err) {
			t.Errorf("a run record was written: %v", err)
		}
	})

	// A FIFO at a record: dispatch reads records without blocking.
	t.Run("run record", func(t *testing.T) {
		plantFIFO(t, h.statePath("runs", "f-run.json"))
		h.must(t, nil, "f-run", h.repo, "hostile:m1", "EXIT=0", "--wait")
		regular(t, h.statePath("runs", "f-run.json"), 0o600)
	})
}

// TestHostileHugeLog (issue 9, items 2 and 10): the previous attempt's log is archived without
// being read into memory: a 1 GiB log (sparse, so the test costs no disk) leaves dispatch's
// memory where it is for a small one, and is archived whole.
func TestHostileHugeLog(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	h.run(t, nil, "g-big", h.repo, "hostile:m1", "EXIT=3", "--wait")
	h.waitGoneEntry(t, "g-big")
	small := h.runFull(t, nil, "g-small", h.repo, "hostile:m1", "EXIT=0")
	if small.code != 0 {
		t.Fatalf("dispatch: exit %d\n%s%s", small.code, small.stdout, small.stderr)
	}

	const size = 1 << 30
	if err := os.Truncate(h.statePath("logs", "g-big.log"), size); err != nil {
		t.Fatal(err)
	}
	big := h.runFull(t, nil, "g-big", h.repo, "hostile:m1", "EXIT=0")
	if big.code != 0 {
		t.Fatalf("dispatch: exit %d\n%s%s", big.code, big.stdout, big.stderr)
	}
	t.Logf("dispatch's peak RSS: %d MiB after a small log, %d MiB after a 1 GiB log", small.maxRSS>>20, big.maxRSS>>20)
	if big.maxRSS > small.maxRSS+64<<20 {
		t.Errorf("dispatch's peak RSS grew from %d MiB to %d MiB to archive a 1 GiB log", small.maxRSS>>20, big.maxRSS>>20)
	}
	fi, err := os.Stat(h.statePath("attempts", "g-big", "output-1.log"))
	if err != nil || fi.Size() != size {
		t.Errorf("attempt 1's output archived as %v, %v; want %d bytes", fi, err, size)
	}
	h.waitFinal("g-big", time.Minute)
}
