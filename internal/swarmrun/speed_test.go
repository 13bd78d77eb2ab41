package swarmrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFlushGroupsConcurrentWrites: attempts launched while the state is being written (each
// must see its attempt named on disk before its supervisor starts) share the next write
// instead of writing the whole state once each, and each sees its own change written.
func TestFlushGroupsConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	r := &runner{paths: Paths{Root: dir}, kick: make(chan struct{}, 1),
		st: &State{ExecutionID: "2026-01-01-x-abcd", Status: ExecRunning, Tasks: map[string]*Task{}, Agents: map[string]*Agent{}}}
	for i := 0; i < 4; i++ {
		id := fmt.Sprintf("t%d", i)
		r.st.Tasks[id] = &Task{ID: id, Branch: id, Priority: "medium", DependsOn: []string{}, Status: Queued}
		r.st.Order = append(r.st.Order, id)
	}
	if err := r.flush(); err != nil {
		t.Fatal(err)
	}
	// A write under way: the four launches come meanwhile.
	r.writeMu.Lock()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.mu.Lock()
			r.st.Tasks[fmt.Sprintf("t%d", i)].Status = Running
			r.enc.mark(fmt.Sprintf("t%d", i))
			r.mu.Unlock()
			errs[i] = r.flush()
		}()
	}
	// The signal: all four have asked for their write (gen counts the first write too).
	for deadline := time.Now().Add(10 * time.Second); ; {
		r.mu.Lock()
		asked := r.gen
		r.mu.Unlock()
		if asked == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the flushes did not start: gen %d", asked)
		}
		time.Sleep(time.Millisecond)
	}
	r.writeMu.Unlock()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if r.writes != 2 {
		t.Errorf("the state was written %d times for one change and four launched at once, want 2 (the four in one)", r.writes)
	}
	st, err := ReadState(filepath.Join(dir, ".swarm", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	for id, task := range st.Tasks {
		if task.Status != Running {
			t.Errorf("%s is %s on disk after its flush returned, want running", id, task.Status)
		}
	}
}

// gitStarts counts the git processes (children included: git commit starts interpret-trailers
// and maintenance) that f starts, from git's own trace2 events.
func gitStarts(t *testing.T, f func()) int {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "trace2")
	t.Setenv("GIT_TRACE2_EVENT", trace)
	f()
	t.Setenv("GIT_TRACE2_EVENT", "")
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), `"event":"start"`)
}

// TestCommitTaskGitProcesses: a task's commit costs three git processes when the agent changed
// nothing and four when it left changes (it cost five and six: git commit's trailers and its
// automatic maintenance are processes of their own), and the commit is the same: title,
// trailers, parent.
func TestCommitTaskGitProcesses(t *testing.T) {
	w := newWorld(t)
	base := git(t, w.repo, "rev-parse", "HEAD")
	for _, change := range []bool{false, true} {
		wt := filepath.Join(t.TempDir(), "wt")
		branch := fmt.Sprintf("b-%v", change)
		git(t, w.repo, "worktree", "add", "--quiet", "-b", branch, wt, base)
		if change {
			os.WriteFile(filepath.Join(wt, "new.txt"), []byte("x\n"), 0o600)
		}
		var sha string
		n := gitStarts(t, func() {
			var err error
			sha, err = commitTask(context.Background(), wt, worktreeStatus{}, base, "2026-01-01-x-abcd", "t1", "local-1", "t1: do it", nil, false)
			if err != nil {
				t.Fatal(err)
			}
		})
		want := 3
		if change {
			want = 4
		}
		if n > want {
			t.Errorf("change %v: %d git processes, want %d", change, n, want)
		}
		if got := git(t, w.repo, "rev-parse", "refs/heads/"+branch); got != sha {
			t.Errorf("change %v: the branch is at %s, the commit is %s", change, got, sha)
		}
		if got := git(t, wt, "rev-parse", "HEAD^"); got != base {
			t.Errorf("change %v: the commit's parent is %s, want the base %s", change, got, base)
		}
		msg := git(t, wt, "log", "-1", "--format=%B")
		title := "t1: do it (no change)"
		if change {
			title = "t1: do it"
		}
		wantMsg := title + "\n\nSwarm-Execution-ID: 2026-01-01-x-abcd\nSwarm-Task-ID: t1\nSwarm-Agent: local-1"
		if msg != wantMsg {
			t.Errorf("change %v: message %q, want %q", change, msg, wantMsg)
		}
		if st := git(t, wt, "status", "--porcelain"); st != "" {
			t.Errorf("change %v: the worktree is not clean after the commit: %q", change, st)
		}
	}
}

// TestBranchClaimedWithItsAssignment: once the run has read the refs, a task's branch is
// claimed in the state change that assigns the task, so the write of that change (the
// writer's) is the one the branch waits for before it is made: claimBranch writes nothing more
// (it wrote the whole state again, a write a task). Without such a write yet, it writes itself.
func TestBranchClaimedWithItsAssignment(t *testing.T) {
	dir := t.TempDir()
	refs := map[string]bool{"refs/heads/users": true}
	r := &runner{paths: Paths{Root: dir}, kick: make(chan struct{}, 1), adopt: map[string]int{},
		refs: refs, refsAtStart: func() (map[string]bool, error) { return refs, nil },
		st: &State{ExecutionID: "2026-01-01-x-abcd", Status: ExecRunning, Tasks: map[string]*Task{}, Agents: map[string]*Agent{}, BranchesMade: []string{}}}
	for _, id := range []string{"a", "b", "c"} {
		r.st.Tasks[id] = &Task{ID: id, Branch: id, Priority: "medium", DependsOn: []string{}, Status: Queued}
		r.st.Order = append(r.st.Order, id)
	}
	r.st.Tasks["c"].Branch = "users"
	r.mu.Lock()
	r.claimAhead(r.st.Tasks["a"])
	r.claimAhead(r.st.Tasks["c"]) // the user's branch: not claimed
	r.writeOrLog()
	r.mu.Unlock()
	if err := r.flush(); err != nil { // the writer's write of the assignment
		t.Fatal(err)
	}
	writes := r.writes
	ctx := context.Background()
	if newBranch, err := r.claimBranch(ctx, r.st.Tasks["a"]); err != nil || !newBranch {
		t.Fatalf("claimBranch(a) = %v, %v; want a new branch", newBranch, err)
	}
	if r.writes != writes {
		t.Errorf("a's branch, claimed with its assignment, cost %d more writes of the state, want none", r.writes-writes)
	}
	st, err := ReadState(filepath.Join(dir, ".swarm", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(st.BranchesMade, " "); got != "a" {
		t.Errorf("branches_made on disk before a's branch is made: %q, want a", got)
	}
	// b was claimed after the last write: its claim writes the state.
	r.mu.Lock()
	r.claimAhead(r.st.Tasks["b"])
	r.mu.Unlock()
	if newBranch, err := r.claimBranch(ctx, r.st.Tasks["b"]); err != nil || !newBranch || r.writes != writes+1 {
		t.Errorf("claimBranch(b) = %v, %v after %d writes; want a new branch, after one write", newBranch, err, r.writes-writes)
	}
	if _, err := r.claimBranch(ctx, r.st.Tasks["c"]); err == nil || !strings.Contains(err.Error(), "did not make it") {
		t.Errorf("claimBranch(c) of the user's branch = %v", err)
	}
}
