package swarmrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/testenv"
)

// TestWorktreeCheckoutsOverlap: only the registration of a task's worktree (git worktree add
// --no-checkout) is one at a time; the checkouts of two tasks on two slots run at once. The
// repository's file has a smudge filter that, inside each checkout, leaves a marker and waits
// (at most 20 s) for another checkout's marker, then records whether it saw one. With the
// checkout under the lock the first checkout waits out its bound alone and records "none".
func TestWorktreeCheckoutsOverlap(t *testing.T) {
	w := newWorld(t)
	record := testenv.MeetingFilter(t, w.repo)
	doc := "name: overlap\ndefaults: {agent: true}\ntasks:\n" +
		"  - {id: a, prompt: nothing, branch: a}\n" +
		"  - {id: b, prompt: nothing, branch: b}\n"
	res, err := Run(context.Background(), w.config(t, doc, 2))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	if res.State.Summary.Completed != 2 {
		t.Fatalf("%d of 2 completed:%s", res.State.Summary.Completed, notCompleted(res.State, w.log.String()))
	}
	if got := testenv.Met(record); strings.Join(got, " ") != "other other" {
		t.Errorf("the checkouts' smudge filters saw %q, want [other other]: a checkout ran alone", got)
	}
	for _, id := range []string{"a", "b"} {
		if s, _ := os.ReadFile(filepath.Join(res.State.Tasks[id].Trace.Worktree, "slow.txt")); string(s) != "slow\n" {
			t.Errorf("task %s's worktree has slow.txt %q", id, s)
		}
	}
}

// TestPostCheckoutHookRunsPerWorktree: a repository with a post-checkout hook gets its
// worktrees from one git worktree add each, as before the split: the hook runs once in each
// task's worktree, with git's arguments (no previous HEAD, the new HEAD, a branch checkout).
func TestPostCheckoutHookRunsPerWorktree(t *testing.T) {
	w := newWorld(t)
	log := filepath.Join(t.TempDir(), "hook.log")
	hook := fmt.Sprintf("#!/bin/sh\necho \"$(pwd) $1 $2 $3\" >> %q\n", log)
	if err := os.WriteFile(filepath.Join(w.repo, ".git", "hooks", "post-checkout"), []byte(hook), 0o700); err != nil {
		t.Fatal(err)
	}
	base := git(t, w.repo, "rev-parse", "main")
	doc := "name: hooked\ndefaults: {agent: true}\ntasks:\n" +
		"  - {id: a, prompt: nothing, branch: a}\n" +
		"  - {id: b, prompt: nothing, branch: b}\n" +
		"  - {id: c, prompt: nothing, branch: c}\n"
	res, err := Run(context.Background(), w.config(t, doc, 2))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	var want []string
	for _, id := range []string{"a", "b", "c"} {
		task := res.State.Tasks[id]
		if task.Status != Completed {
			t.Fatalf("%s: %s, error %+v\n%s", id, task.Status, task.Error, w.log.String())
		}
		want = append(want, fmt.Sprintf("%s %s %s 1", task.Trace.Worktree, strings.Repeat("0", 40), base))
	}
	b, _ := os.ReadFile(log)
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("post-checkout hook ran:\n%s\nwant once per worktree:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
