package swarmrun

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/manifest"
	schemas "github.com/agentfleet/fleet/state/schemas"
)

// userCommit makes branch b in the repository, one commit ahead of main, as a user would, and
// returns that commit.
func userCommit(t *testing.T, repo, b string) string {
	t.Helper()
	git(t, repo, "branch", b, "main")
	tree := git(t, repo, "rev-parse", "main^{tree}")
	c := git(t, repo, "commit-tree", tree, "-p", "main", "-m", "the user's work")
	git(t, repo, "update-ref", "refs/heads/"+b, c)
	return c
}

// TestResumeChecksANewTasksBranch: a task added to the manifest of an execution gets the start's
// check: its branch exists (the user's, with a commit), so --resume refuses, and the branch
// keeps its commit. Before, the task ran with git worktree add -B, which reset the branch onto
// the base: the user's commit was left in the reflog only and the run reported success.
func TestResumeChecksANewTasksBranch(t *testing.T) {
	w := newWorld(t)
	doc := "name: grows\ndefaults: {agent: true}\ntasks:\n  - {id: a, prompt: p, branch: a}\n"
	if _, err := Run(context.Background(), w.config(t, doc, 1)); err != nil {
		t.Fatal(err)
	}
	mine := userCommit(t, w.repo, "b")
	cfg := w.config(t, doc+"  - {id: b, prompt: p, branch: b}\n", 1)
	cfg.Resume = true
	_, err := Run(context.Background(), cfg)
	var ue *UsageError
	if err == nil || !asUsage(err, &ue) || !strings.Contains(err.Error(), `branch "b" of task "b" (new to execution`) {
		t.Errorf("Run --resume with a new task on an existing branch = %v", err)
	}
	if got := git(t, w.repo, "rev-parse", "refs/heads/b"); got != mine {
		t.Errorf("the user's branch b moved from %s to %s", mine, got)
	}
}

// TestNeverResetsABranchTheExecutionDidNotMake: a task of the execution that never ran (blocked
// behind a failure) finds its branch made by the user meanwhile: the task fails, saying so, and
// the branch keeps the user's commit; -B is only for branches the execution made.
func TestNeverResetsABranchTheExecutionDidNotMake(t *testing.T) {
	w := newWorld(t)
	doc := "name: blocked\ndefaults: {agent: fake}\ntasks:\n" +
		"  - {id: a, prompt: \"fail\", branch: a}\n" +
		"  - {id: b, prompt: \"write:b.txt\", branch: b, depends_on: [a]}\n"
	res, err := Run(context.Background(), w.config(t, doc, 1))
	if err != nil || res.State.Tasks["b"].Status != Blocked {
		t.Fatalf("first run: %v, %+v", err, res)
	}
	mine := userCommit(t, w.repo, "b")
	cfg := w.config(t, strings.Replace(doc, `"fail"`, `"write:a.txt"`, 1), 1)
	cfg.Retry = []string{"a"}
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := res.State.Tasks["b"]
	if b.Status != Failed || b.Error == nil || !strings.Contains(b.Error.Message, "did not make it") {
		t.Errorf("b = %s, error %+v; want failed, its branch the user's", b.Status, b.Error)
	}
	if got := git(t, w.repo, "rev-parse", "refs/heads/b"); got != mine {
		t.Errorf("the user's branch b moved from %s to %s", mine, got)
	}
	if a := res.State.Tasks["a"]; a.Status != Completed {
		t.Errorf("a = %s, error %+v", a.Status, a.Error)
	}
	if got := strings.Join(res.State.BranchesMade, " "); got != "a" {
		t.Errorf("branches_made = %q, want a", got)
	}
}

// TestResumeRefusesAChangedBranch: a task whose branch the manifest changed since the start is
// refused with one line, not run on its old branch in silence.
func TestResumeRefusesAChangedBranch(t *testing.T) {
	w := newWorld(t)
	doc := "name: moved\ndefaults: {agent: true}\ntasks:\n  - {id: a, prompt: p, branch: a}\n"
	if _, err := Run(context.Background(), w.config(t, doc, 1)); err != nil {
		t.Fatal(err)
	}
	cfg := w.config(t, strings.Replace(doc, "branch: a", "branch: a2", 1), 1)
	cfg.Resume = true
	_, err := Run(context.Background(), cfg)
	var ue *UsageError
	if err == nil || !asUsage(err, &ue) || !strings.Contains(err.Error(), `task "a" has the branch "a" in execution`) {
		t.Errorf("Run --resume with a task's branch changed = %v", err)
	}
}

// TestResumeRefusesAHostileState: the execution id read back from .swarm/state.json names the
// history file: one with a path in it (the old schema's pattern took any characters) is not
// acted on, and nothing is written outside .swarm. Before, --resume ran the execution and wrote
// its history where the id pointed.
func TestResumeRefusesAHostileState(t *testing.T) {
	w := newWorld(t)
	doc := "name: hostile\ndefaults: {agent: true}\ntasks:\n  - {id: a, prompt: p, branch: a}\n"
	id := "2024-01-01-x/../../../../escape-abcd"
	st := &State{ExecutionID: id, ManifestName: "hostile", BaseBranch: "main", StartedAt: now(), Status: ExecPaused,
		Tasks:  map[string]*Task{"a": {ID: "a", Prompt: "p", Branch: "a", Priority: "medium", DependsOn: []string{}, Status: Pending}},
		Agents: map[string]*Agent{}, Order: []string{"a"}}
	b, _ := json.MarshalIndent(st, "", "  ")
	p := Paths{Root: w.repo}
	os.MkdirAll(p.Dir(), 0o700)
	if err := os.WriteFile(p.State(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := w.config(t, doc, 1)
	cfg.Resume = true
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "is not YYYY-MM-DD-<slug>-<4 hex>") {
		t.Errorf("Run --resume of a state with execution id %q = %v", id, err)
	}
	outside := filepath.Join(filepath.Dir(w.repo), "escape-abcd.json")
	if _, err := os.Lstat(outside); err == nil {
		t.Errorf("the history was written outside .swarm, at %s", outside)
	}
	for _, bad := range []func(*State){
		func(s *State) { s.Tasks["a"].Branch = "-oops" },
		func(s *State) { s.BaseBranch = "--upload-pack=x" },
		func(s *State) { s.Tasks["../x"] = &Task{ID: "../x", Branch: "x", Status: Pending} },
		func(s *State) { s.Tasks["a"].DependsOn = []string{"ghost"} },
		func(s *State) { s.Order = append(s.Order, "ghost") },
		func(s *State) { s.Tasks["a"].Trace = &Trace{BaseSHA: "--all"} },
		func(s *State) { s.Tasks["a"] = nil },
		func(s *State) { s.BranchesMade = []string{"-x"} },
	} {
		s := *st
		s.ExecutionID = "2024-01-01-hostile-abcd"
		s.Tasks = map[string]*Task{"a": {ID: "a", Branch: "a", Status: Pending}}
		s.Order = []string{"a"}
		bad(&s)
		b, _ := json.Marshal(&s)
		os.WriteFile(p.State(), b, 0o600)
		if _, err := ReadState(p.State()); err == nil || !strings.Contains(err.Error(), "it is not acted on") {
			t.Errorf("ReadState of %s = %v, want it refused", b, err)
		}
	}
}

// TestExecutionIDPatternIsTheSchemas: the execution schema's execution_id pattern is the one
// the state is checked with when read back, and every id the run makes matches it, whatever
// the manifest's name.
func TestExecutionIDPatternIsTheSchemas(t *testing.T) {
	b, err := schemas.Read("execution")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties map[string]struct {
			Pattern string `json:"pattern"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Properties["execution_id"].Pattern; got != ExecutionIDPattern {
		t.Errorf("the schema's execution_id pattern is %q, the reader's %q", got, ExecutionIDPattern)
	}
	for _, name := range []string{"Sprint 47", "  Bug fixes!! ", "ÉtÉ", "a--b", "x/../../y", strings.Repeat("long name ", 20), "9"} {
		m, err := manifest.Parse("w.yaml", []byte("name: "+jsonString(name)+"\ntasks:\n  - {id: a, prompt: p, branch: a}\n"), nil)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if id := newID(m, time.Now()); CheckExecutionID(id) != nil {
			t.Errorf("name %q makes the execution id %q: %v", name, id, CheckExecutionID(id))
		}
	}
	for _, id := range []string{"2024-01-01-x/../../y-abcd", "2024-01-01--abcd", "2024-01-01-A-abcd", "2024-01-01-a--b-abcd", "sprint47"} {
		if CheckExecutionID(id) == nil {
			t.Errorf("CheckExecutionID(%q) = nil", id)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestSwarmDirExcluded: the run adds /.swarm/ to the repository's info/exclude once, so the main
// worktree's git status (and git add -A) never takes the state, the prompts or the tasks'
// worktrees; a second run does not add it again.
func TestSwarmDirExcluded(t *testing.T) {
	w := newWorld(t)
	for i, b := range []string{"a", "b"} {
		doc := "name: n" + b + "\ndefaults: {agent: true}\ntasks:\n  - {id: " + b + ", prompt: p, branch: " + b + "}\n"
		if _, err := Run(context.Background(), w.config(t, doc, 1)); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	if st := git(t, w.repo, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status in the main worktree after a run:\n%s", st)
	}
	b, _ := os.ReadFile(filepath.Join(w.repo, ".git", "info", "exclude"))
	if n := strings.Count(string(b), "\n/.swarm/\n"); n != 1 {
		t.Errorf("info/exclude names /.swarm/ %d times:\n%s", n, b)
	}
}

// TestAgentCannotRedirectASiblingsWorktree: an agent moves another task's worktree aside (its
// slot's: b runs in local-2) and puts a link in its place, aimed at another repository of the user's, while that task's agent
// works. The other task's commit is refused (its worktree is no real directory), and the
// user's repository keeps its commit. Before, the run committed through the link: git commit
// --amend rewrote the user's last commit with the task's trailers.
func TestAgentCannotRedirectASiblingsWorktree(t *testing.T) {
	w := newWorld(t)
	tmp := t.TempDir()
	users := filepath.Join(tmp, "users-repo")
	os.MkdirAll(users, 0o700)
	git(t, users, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(users, "mine.txt"), []byte("mine\n"), 0o600)
	git(t, users, "add", "-A")
	git(t, users, "-c", "user.name=u", "-c", "user.email=u@e", "commit", "-q", "-m", "the user's commit")
	head := git(t, users, "rev-parse", "HEAD")
	gateA, gateB := filepath.Join(tmp, "a-done"), filepath.Join(tmp, "b-started")
	doc := fmt.Sprintf("name: hostile\ndefaults: {agent: fake}\ntasks:\n"+
		"  - {id: a, prompt: \"waitfor:%s relink:../.slot-local-2=%s touch:%s\", branch: a}\n"+
		"  - {id: b, prompt: \"touch:%s waitfor:%s\", branch: b}\n", gateB, users, gateA, gateB, gateA)
	res, err := Run(context.Background(), w.config(t, doc, 2))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, w.log.String())
	}
	b := res.State.Tasks["b"]
	if b.Status != Failed || b.Error == nil || !strings.Contains(b.Error.Message, "is a symbolic link") {
		t.Errorf("b = %s, error %+v; want failed, its worktree a link", b.Status, b.Error)
	}
	if got := git(t, users, "rev-parse", "HEAD"); got != head {
		t.Errorf("the user's repository moved from %s to %s: %s", head, got, git(t, users, "log", "-1", "--format=%B"))
	}
}

// TestReadStateOfTheSchemasFixtures: every valid execution state of the schema's fixtures (the
// seed's, without task_order or base_branch) is read, its tasks in order; the one whose
// execution id breaks the pattern is not.
func TestReadStateOfTheSchemasFixtures(t *testing.T) {
	dir := filepath.Join("..", "..", "state", "schemas", "testdata", "execution")
	valid, _ := filepath.Glob(filepath.Join(dir, "valid", "*.json"))
	if len(valid) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range valid {
		st, err := ReadState(f)
		if err != nil {
			t.Errorf("ReadState(%s) = %v", f, err)
			continue
		}
		if len(st.Order) != len(st.Tasks) {
			t.Errorf("%s: task order %v for %d tasks", f, st.Order, len(st.Tasks))
		}
	}
	if _, err := ReadState(filepath.Join(dir, "invalid", "execution-id-format.json")); err == nil {
		t.Error("ReadState of execution-id-format.json = nil error")
	}
}
