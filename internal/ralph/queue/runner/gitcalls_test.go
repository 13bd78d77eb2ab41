package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// countGit puts a git on PATH that notes each of its command lines in a file, then runs the
// real git, and returns a function that reads the command lines noted so far.
func countGit(t *testing.T) func() []string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\nexec %q \"$@\"\n", calls, real)
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		b, _ := os.ReadFile(calls)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

// TestGitProcessesPerTask: with the no-progress breaker on, a task's attempt asks git once for
// the tree's top, index and HEAD, whose answer the breaker's fingerprint and the attempt's
// context (seed 004) share, and once outside git, where no other question is asked (issue 16:
// HEAD was asked apart, and the fingerprint asked three questions in three processes; the
// queue's launch per task had grown 1.4x in the benchmark).
func TestGitProcessesPerTask(t *testing.T) {
	const tasks = 3
	for _, inGit := range []bool{false, true} {
		t.Run(fmt.Sprintf("git=%v", inGit), func(t *testing.T) {
			ids := make([]string, tasks)
			for i := range ids {
				ids[i] = fmt.Sprintf("t%d: task %d", i+1, i+1)
			}
			var w *world
			if inGit {
				w = gitWorld(t, ids...)
			} else {
				w = newWorld(t, ids...)
			}
			calls := countGit(t)
			log := newLogWatch()
			cfg := w.config(1, 1, log)
			cfg.NoProgress = 3
			w.run(context.Background(), cfg)
			for i := 1; i <= tasks; i++ {
				if got := w.task(fmt.Sprintf("t%d", i)).Status; got != "done" {
					t.Fatalf("t%d is %s\n%s", i, got, log)
				}
			}
			// In git, per task: rev-parse (top, index, HEAD), add -A and write-tree for the
			// fingerprint; rev-list, diff and ls-files for the context. Outside: one rev-parse.
			want := 1
			if inGit {
				want = 6
			}
			got := calls()
			if len(got) > want*tasks {
				t.Errorf("%d git processes for %d tasks, want at most %d a task:\n%s", len(got), tasks, want, strings.Join(got, "\n"))
			}
		})
	}
}
