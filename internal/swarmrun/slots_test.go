package swarmrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlotWorktreeReusedForEachTask: the tasks of one slot work in one worktree, the slot's,
// re-pointed to each task's branch from the base (one git worktree add for the run, where
// each task added its own), and each task starts from the base alone: neither the files a task
// before committed nor those git ignores that it left are there.
func TestSlotWorktreeReusedForEachTask(t *testing.T) {
	w := newWorld(t)
	os.WriteFile(filepath.Join(w.repo, ".gitignore"), []byte("*.log\n"), 0o600)
	git(t, w.repo, "add", "-A")
	git(t, w.repo, "commit", "-q", "-m", "ignore logs")
	doc := "name: slots\ndefaults: {agent: fake}\ntasks:\n" +
		"  - {id: a, prompt: \"write:a.txt write:build.log\", branch: a}\n" +
		"  - {id: b, prompt: \"write:b.txt\", branch: b}\n" +
		"  - {id: c, prompt: nothing, branch: c}\n"
	var res *Result
	trace := filepath.Join(t.TempDir(), "trace2")
	t.Setenv("GIT_TRACE2_EVENT", trace)
	res, err := Run(context.Background(), w.config(t, doc, 1))
	t.Setenv("GIT_TRACE2_EVENT", "")
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	slot := filepath.Join(Paths{Root: w.repo}.Worktrees(), ".slot-local-1")
	for _, id := range []string{"a", "b", "c"} {
		task := res.State.Tasks[id]
		if task.Status != Completed || task.Trace.Worktree != slot {
			t.Errorf("%s: %s in %s, want completed in the slot's worktree %s", id, task.Status, task.Trace.Worktree, slot)
		}
		if n := git(t, w.repo, "rev-list", "--count", "main.."+*task.Trace.CommitSHA); n != "1" {
			t.Errorf("%s: %s commits on the base, want its own alone", id, n)
		}
	}
	if files := git(t, w.repo, "ls-tree", "--name-only", "refs/heads/b"); strings.Contains(files, "a.txt") {
		t.Errorf("b's branch has a's file: %s", files)
	}
	for _, f := range []string{"a.txt", "b.txt", "build.log"} {
		if exists(filepath.Join(slot, f)) {
			t.Errorf("the slot's worktree, on c's branch, still has %s of a task before", f)
		}
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"worktree","add"`); n != 1 {
		t.Errorf("git worktree add ran %d times for three tasks on one slot, want once", n)
	}
	if _, err := ReadState(Paths{Root: w.repo}.State()); err != nil {
		t.Errorf("the state naming the slot's worktree is not read back: %v", err)
	}
	// The run's end frees the branches: c's, the slot's last, is checked out nowhere, so the
	// user (git switch c) or swarm run merge --into c can take it.
	if list := git(t, w.repo, "worktree", "list", "--porcelain"); strings.Contains(list, "refs/heads/c") {
		t.Errorf("after the run, c's branch is still checked out:\n%s", list)
	}
}

// TestFailedTaskKeepsItsWorktree: a task that failed keeps what its agent left, in
// .swarm/worktrees/<task> on its branch, the state's trace naming it, while the slot's next
// task works in a fresh worktree; a retry of the task starts afresh and removes the kept one.
func TestFailedTaskKeepsItsWorktree(t *testing.T) {
	w := newWorld(t)
	doc := "name: kept\ndefaults: {agent: fake}\ntasks:\n" +
		"  - {id: a, prompt: \"write:a.txt fail\", branch: a}\n" +
		"  - {id: b, prompt: \"write:b.txt\", branch: b}\n"
	res, err := Run(context.Background(), w.config(t, doc, 1))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	kept := Paths{Root: w.repo}.Worktree("a")
	a, b := res.State.Tasks["a"], res.State.Tasks["b"]
	if a.Status != Failed || a.Trace.Worktree != kept {
		t.Fatalf("a: %s in %s, want failed, its worktree kept at %s", a.Status, a.Trace.Worktree, kept)
	}
	if got, err := os.ReadFile(filepath.Join(kept, "a.txt")); err != nil || !strings.Contains(string(got), "a") {
		t.Errorf("a's kept worktree has no a.txt: %q, %v", got, err)
	}
	if br := git(t, kept, "symbolic-ref", "HEAD"); br != "refs/heads/a" {
		t.Errorf("a's kept worktree is on %s, want refs/heads/a", br)
	}
	if b.Status != Completed || exists(filepath.Join(b.Trace.Worktree, "a.txt")) {
		t.Errorf("b: %s in %s (a.txt there: %v), want completed in a fresh worktree", b.Status, b.Trace.Worktree, exists(filepath.Join(b.Trace.Worktree, "a.txt")))
	}
	checkValid(t, Paths{Root: w.repo}.State())
	if _, err := ReadState(Paths{Root: w.repo}.State()); err != nil {
		t.Fatalf("the state is not read back: %v", err)
	}

	cfg := w.config(t, strings.Replace(doc, "write:a.txt fail", "write:a.txt", 1), 1)
	cfg.Retry = []string{"a"}
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run --retry a: %v\n%s", err, w.log.String())
	}
	if a := res.State.Tasks["a"]; a.Status != Completed || a.Trace.Worktree == kept {
		t.Errorf("a after --retry: %s in %s, want completed in its slot's worktree", a.Status, a.Trace.Worktree)
	}
	if exists(kept) {
		t.Errorf("a's kept worktree %s is still there after its retry completed", kept)
	}
	if out := git(t, w.repo, "worktree", "list", "--porcelain"); strings.Contains(out, kept+"\n") {
		t.Errorf("git still lists a's kept worktree:\n%s", out)
	}
}

// TestGitProcessesPerTask: a task of an agent that changed nothing costs six git processes
// over the run (its worktree re-pointed: git checkout; git status; git commit-tree and
// update-ref for its commit; git merge-tree and commit-tree for the merge order), counted from
// git's own trace2 events, children included. It cost eleven: a worktree added per task (git
// worktree add starts two more), a rev-parse saying its branch was not the user's, and a
// symbolic-ref asking whether the agent stayed on the task's branch.
func TestGitProcessesPerTask(t *testing.T) {
	count := func(tasks int) int {
		w := newWorld(t)
		var doc strings.Builder
		doc.WriteString("name: count\ndefaults: {agent: true}\ntasks:\n")
		for i := 0; i < tasks; i++ {
			fmt.Fprintf(&doc, "  - {id: t%d, prompt: nothing, branch: b%d}\n", i, i)
		}
		cfg := w.config(t, doc.String(), 1)
		return gitStarts(t, func() {
			if res, err := Run(context.Background(), cfg); err != nil || res.State.Summary.Completed != tasks {
				t.Fatalf("Run: %v, %+v\n%s", err, res, w.log.String())
			}
		})
	}
	one, five := count(1), count(5)
	per := float64(five-one) / 4
	t.Logf("%.1f git processes a task", per)
	if per > 6 {
		t.Errorf("%.1f git processes a task (%d for one task, %d for five), want at most 6", per, one, five)
	}
}

// TestInterruptedTaskKeepsItsWorktree: a task stopped by an interrupt keeps what its agent left
// in .swarm/worktrees/<task>, which the paused state names; --resume runs it again afresh in its
// slot's worktree, and the kept one goes.
func TestInterruptedTaskKeepsItsWorktree(t *testing.T) {
	w := newWorld(t)
	gate := filepath.Join(t.TempDir(), "started")
	doc := fmt.Sprintf("name: stopped\ndefaults: {agent: fake}\ntasks:\n  - {id: slow, prompt: \"write:s.txt touch:%s hang\", branch: slow}\n", gate)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var res *Result
	var err error
	go func() {
		res, err = Run(ctx, w.config(t, doc, 1))
		close(done)
	}()
	waitFile(t, gate)
	cancel()
	<-done
	if err != nil || !res.Interrupted {
		t.Fatalf("Run interrupted = %+v, %v", res, err)
	}
	kept := Paths{Root: w.repo}.Worktree("slow")
	st := checkValid(t, Paths{Root: w.repo}.State())
	if slow := st.Tasks["slow"]; slow.Status != Pending || slow.Trace.Worktree != kept {
		t.Fatalf("after the interrupt: slow %s in %s, want pending, its worktree kept at %s", slow.Status, slow.Trace.Worktree, kept)
	}
	if !exists(filepath.Join(kept, "s.txt")) {
		t.Errorf("the interrupted task's kept worktree has no s.txt")
	}
	cfg := w.config(t, strings.Replace(doc, " hang", "", 1), 1)
	cfg.Resume = true
	if res, err = Run(context.Background(), cfg); err != nil || res.State.Tasks["slow"].Status != Completed {
		t.Fatalf("Run --resume: %v, %+v\n%s", err, res, w.log.String())
	}
	if exists(kept) {
		t.Errorf("the kept worktree %s is still there after the task completed", kept)
	}
}
