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
			sha, err = commitTask(context.Background(), wt, base, "2026-01-01-x-abcd", "t1", "local-1", "t1: do it", nil, false)
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
