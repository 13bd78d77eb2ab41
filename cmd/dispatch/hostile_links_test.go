package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// TestHostileLinks (issue 9, item 1): a symbolic link planted in the state directory, at any
// file the tools create or rewrite there, is never written through: the file it points to keeps
// its content and its mode, and reconcile never copies a linked log into a record.
func TestHostileLinks(t *testing.T) {
	t.Parallel()
	h := newHostile(t)

	// A planted link at a file dispatch or its supervisor creates: the attempt runs, the file is
	// made fresh in the link's place.
	for _, tc := range []struct {
		name, bead, agent string
		path              []string // in the state directory
		perm              os.FileMode
	}{
		{"log", "l-log", "hostile", []string{"logs", "l-log.log"}, 0o600},
		{"reserve", "l-res", "hostile", []string{"reserves", "l-res"}, 0},
		{"prompt file", "l-prompt", "filer", []string{"prompts", "l-prompt.txt"}, 0o600},
		{"run record", "l-run", "hostile", []string{"runs", "l-run.json"}, 0o600},
		{"result record", "l-result", "hostile", []string{"results", "l-result.json"}, 0o600},
		{"registry entry", "l-entry", "hostile", []string{"supervisors", "l-entry.json"}, 0},
		{"control socket", "l-sock", "hostile", []string{"sockets", "l-sock.sock"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := h.victim(t, tc.bead)
			plantLink(t, v.path, h.statePath(tc.path...))
			h.must(t, nil, tc.bead, h.repo, tc.agent+":m1", "EXIT=0", "--wait")
			v.intact(t)
			if tc.perm != 0 {
				regular(t, h.statePath(tc.path...), tc.perm)
			}
		})
	}

	// Truthsayer's findings, which dispatch.sh truncated at each launch (a stand-in Truthsayer
	// that watches until it is stopped).
	t.Run("truthsayer log", func(t *testing.T) {
		bin := filepath.Join(h.dir, "truthsayer")
		os.WriteFile(bin, []byte("#!/bin/sh\necho 'WARNING: stand-in'\nexec sleep 1000\n"), 0o755)
		v := h.victim(t, "l-truth")
		plantLink(t, v.path, h.statePath("truthsayer", "l-truth.log"))
		h.must(t, []string{"TRUTHSAYER_BIN=" + bin}, "l-truth", h.repo, "hostile:m1", "EXIT=0", "--wait")
		v.intact(t)
		regular(t, h.statePath("truthsayer", "l-truth.log"), 0o600)
	})

	// A link at a lock: the lock is refused (replacing it would let two processes each hold
	// "the" lock), with a message that says why, and nothing is created where it points.
	for _, tc := range []struct {
		name, bead string
		path       []string
	}{
		{"bead lock", "l-lock", []string{"locks", "l-lock.lock"}},
		{"run record lock", "l-rlock", []string{"locks", "runs", "l-rlock.lock"}},
		{"result record lock", "l-slock", []string{"locks", "results", "l-slock.lock"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := filepath.Join(h.dir, tc.bead+"-created-by-the-lock")
			plantLink(t, target, h.statePath(tc.path...))
			code, stdout, stderr := h.run(t, nil, tc.bead, h.repo, "hostile:m1", "EXIT=0", "--wait")
			if code != 1 || !strings.Contains(stderr, "link") {
				t.Errorf("dispatch with a link at %s: exit %d, stderr %q; want 1 and the link named\n%s", filepath.Join(tc.path...), code, stderr, stdout)
			}
			if _, err := os.Lstat(target); err == nil {
				t.Errorf("the lock created %s through the link", target)
			}
		})
	}

	// The agent's log made a link while the agent runs (a hostile agent, or another user at
	// the right moment): what runs after the agent (here --verify) is appended to the log, and
	// never through the link; the next dispatch archives no linked log.
	t.Run("log relinked during the attempt", func(t *testing.T) {
		v := h.victim(t, "l-relink")
		h.must(t, []string{"HOSTILE_VICTIM=" + v.path}, "l-relink", h.repo, "hostile", "LINK_LOG", "--verify", "echo verified-output", "--wait")
		v.intact(t)
		h.waitGoneEntry(t, "l-relink")
		h.must(t, nil, "l-relink", h.repo, "hostile:m1", "EXIT=0", "--wait")
		v.intact(t)
		if b, err := os.ReadFile(h.statePath("attempts", "l-relink", "output-1.log")); err == nil && strings.Contains(string(b), "precious") {
			t.Errorf("attempt 1's archived output is the linked file's content: %q", b)
		}
		regular(t, h.statePath("logs", "l-relink.log"), 0o600)
	})

	// A link planted in the archive of earlier attempts.
	t.Run("archive", func(t *testing.T) {
		h.run(t, nil, "l-arch", h.repo, "hostile:m1", "EXIT=3", "--wait")
		h.waitGoneEntry(t, "l-arch")
		var victims []*victim
		for _, name := range []string{"run-1.json", "result-1.json", "output-1.log"} {
			v := h.victim(t, "l-arch-"+name)
			plantLink(t, v.path, h.statePath("attempts", "l-arch", name))
			victims = append(victims, v)
		}
		h.run(t, nil, "l-arch", h.repo, "hostile:m1", "EXIT=0", "--wait")
		for _, v := range victims {
			v.intact(t)
		}
		regular(t, h.statePath("attempts", "l-arch", "run-1.json"), 0o600)
	})

	// reconcile --all closes run records no supervisor registered (dispatch.sh's): one that is a
	// link is not closed, since closing it would copy what it points to into the state
	// directory (here, a record of someone else's, with their prompt).
	t.Run("reconcile --all and a linked record", func(t *testing.T) {
		secret := filepath.Join(h.dir, "someone-elses-run.json")
		run := record.Run{SchemaVersion: 1, Bead: "l-rec", Agent: "claude", Model: "opus", Repo: "/elsewhere",
			Prompt: "SECRET", PromptHash: record.PromptHash("SECRET"), PromptFull: "SECRET", StartedAt: "2026-01-01T00:00:00Z",
			Status: record.StatusRunning, Attempt: 1, MaxRetries: 2, SessionName: "agent-l-rec", ResultFile: "/elsewhere/l-rec.json"}
		writeJSON(t, secret, &run)
		plantLink(t, secret, h.statePath("runs", "l-rec.json"))
		code, stdout, stderr := h.run(t, nil, "reconcile", "--all")
		if code != 1 || !strings.Contains(stderr, "symbolic link") {
			t.Errorf("reconcile --all with a linked run record: exit %d\n%s%s; want 1 and the link named", code, stdout, stderr)
		}
		if b, err := os.ReadFile(h.statePath("runs", "l-rec.json")); err == nil && strings.Contains(string(b), "SECRET") {
			if fi, _ := os.Lstat(h.statePath("runs", "l-rec.json")); fi.Mode().IsRegular() {
				t.Errorf("reconcile copied the linked record into the state directory: %s", b)
			}
		}
		os.Remove(h.statePath("runs", "l-rec.json"))
	})

	// Reconcile closes a lost attempt with the tail of its log as output_summary: never the
	// tail of a file a link at the log points to.
	t.Run("reconcile summary", func(t *testing.T) {
		v := h.victim(t, "l-summ")
		h.must(t, nil, "l-summ", h.repo, "hostile", "HANG")
		h.waitAgent("l-summ", time.Minute)
		h.killSupervisor(t, "l-summ")
		plantLink(t, v.path, h.statePath("logs", "l-summ.log"))
		out := h.must(t, nil, "reconcile")
		if !strings.Contains(out, "l-summ: closed as failed (supervisor-lost)") {
			t.Errorf("reconcile did not close l-summ:\n%s", out)
		}
		run, err := record.ReadRun(h.store().RunPath("l-summ"))
		if err != nil {
			t.Fatal(err)
		}
		if run.OutputSummary != nil && strings.Contains(*run.OutputSummary, "precious") {
			t.Errorf("output_summary is the linked file's content: %q", *run.OutputSummary)
		}
		v.intact(t)
	})
}

// TestHostileStateDirectories (issue 9, item 1): a subdirectory of the state directory that is
// a link, or that belongs to another user, is refused with one line saying so, before anything
// is written into it.
func TestHostileStateDirectories(t *testing.T) {
	t.Parallel()
	h := newHostile(t)

	t.Run("linked subdirectory", func(t *testing.T) {
		state := filepath.Join(h.dir, "state-linked")
		elsewhere := filepath.Join(h.dir, "elsewhere")
		os.MkdirAll(state, 0o700)
		os.MkdirAll(elsewhere, 0o700)
		plantLink(t, elsewhere, filepath.Join(state, "logs"))
		code, _, stderr := h.run(t, []string{"STATE_DIR=" + state}, "d-link", h.repo, "hostile:m1", "EXIT=0", "--wait")
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "symbolic link") || !strings.Contains(stderr, filepath.Join(state, "logs")) {
			t.Errorf("dispatch with state/logs a link: exit %d, stderr %q; want 1 and one line naming the link", code, stderr)
		}
		if names, _ := os.ReadDir(elsewhere); len(names) > 0 {
			t.Errorf("dispatch wrote through the linked state/logs: %v", names)
		}
	})

	t.Run("subdirectory of another user", func(t *testing.T) {
		state := filepath.Join(h.dir, "state-shared")
		logs := filepath.Join(state, "logs")
		os.MkdirAll(logs, 0o755)
		if err := os.Chown(logs, nobodyID, nobodyID); err != nil {
			t.Skipf("chown: %v", err)
		}
		openUp(t, logs)
		v := h.victim(t, "d-shared")
		// User nobody, who owns state/logs, plants a link where the agent's log will go.
		asNobody(t, "ln", "-s", v.path, filepath.Join(logs, "d-shared.log"))
		code, _, stderr := h.run(t, []string{"STATE_DIR=" + state}, "d-shared", h.repo, "hostile:m1", "EXIT=0", "--wait")
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "uid 65534") || !strings.Contains(stderr, logs) {
			t.Errorf("dispatch with state/logs of user nobody: exit %d, stderr %q; want 1 and one line naming the owner", code, stderr)
		}
		v.intact(t)
		// ps and reconcile refuse it the same way, once.
		for _, verb := range []string{"ps", "reconcile"} {
			code, _, stderr := h.run(t, []string{"STATE_DIR=" + state}, verb)
			if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "uid 65534") {
				t.Errorf("dispatch %s with state/logs of user nobody: exit %d, stderr %q; want 1 and one line", verb, code, stderr)
			}
		}
	})
}
