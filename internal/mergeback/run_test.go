package mergeback

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/manifest"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarmrun"
)

// TestMergeARealRun is issue 30's case end to end: a swarm run of twelve tasks in a graph
// (t08's branch conflicting with t06's, t10's test red), then merges of what it completed, read
// from the execution's state as `swarm run merge` reads it. The first lands exactly the clean,
// green branches in order and stops at t10's red test; once t10 is fixed on its branch the
// second lands it and stops at t08's conflict, naming shared.txt; once the conflict is
// resolved on t08's branch the third lands the rest. main never holds t10's red merge.
func TestMergeARealRun(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, false) // only its repository's base commit is used
	repo := t.TempDir() + "/run"
	git(t, filepath.Dir(repo), "clone", "-q", "--no-local", "--single-branch", "-b", "main", g.repo, repo)
	git(t, repo, "config", "user.email", "test@example.com")
	git(t, repo, "config", "user.name", "test")
	st := runTwelve(t, repo)
	var branches []Branch
	for _, id := range st.Order {
		if task := st.Tasks[id]; task.Status == swarmrun.Completed {
			branches = append(branches, Branch{ID: id, Branch: task.Branch, DependsOn: task.DependsOn})
		}
	}
	if len(branches) != 12 {
		t.Fatalf("the run completed %d tasks, want 12", len(branches))
	}
	git(t, repo, "switch", "-q", "--detach", "main")
	p := Plan{Repo: repo, Owner: st.ExecutionID, Base: st.BaseBranch, Branches: branches, Test: []string{"sh", "check.sh"},
		Scratch: filepath.Join(repo, ".swarm", "worktrees", ".merge-"+st.ExecutionID), Beneath: repo,
		Record: filepath.Join(repo, ".swarm", "history", st.ExecutionID+".merge.json"), Label: "swarm run merge"}

	_, err := Merge(ctx, p)
	var stopped *StoppedError
	if !errors.As(err, &stopped) || stopped.Stop.Reason != StopTest || stopped.Stop.ID != "t10" {
		t.Fatalf("first merge: %v, want t10's red test", err)
	}
	if got := landedOn(t, repo, "main"); !reflect.DeepEqual(got, ids(1, 7)) {
		t.Fatalf("after the first merge main holds %v, want %v", got, ids(1, 7))
	}

	// The run's slots let go of the branches at its end: each is fixed in a worktree of the
	// user's own, as a user would.
	worktreeOn := func(branch string) string {
		dir := filepath.Join(t.TempDir(), filepath.Base(branch))
		git(t, repo, "worktree", "add", "-q", dir, branch)
		return dir
	}
	wt10 := worktreeOn("feature/t10")
	git(t, wt10, "rm", "-q", "broken")
	git(t, wt10, "commit", "-q", "-m", "t10: green")
	_, err = Merge(ctx, p)
	if !errors.As(err, &stopped) || stopped.Stop.Reason != StopConflict || stopped.Stop.ID != "t08" || !reflect.DeepEqual(stopped.Stop.Files, []string{"shared.txt"}) {
		t.Fatalf("second merge: %v, want t08's conflict in shared.txt", err)
	}
	if got := landedOn(t, repo, "main"); !reflect.DeepEqual(got, append(ids(1, 7), ids(10, 12)...)) {
		t.Fatalf("after the second merge main holds %v", got)
	}

	wt08 := worktreeOn("feature/t08")
	runGit(wt08, "merge", "-q", "refs/heads/main") // stops on the conflict, resolved below
	write(t, filepath.Join(wt08, "shared.txt"), "by-t06-and-t08\n")
	git(t, wt08, "add", "-A")
	git(t, wt08, "commit", "-q", "--no-edit")
	if _, err := Merge(ctx, p); err != nil {
		t.Fatalf("third merge: %v", err)
	}
	want := append(append(ids(1, 7), ids(10, 12)...), "t08", "t09")
	if got := landedOn(t, repo, "main"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the third merge main holds %v, want %v", got, want)
	}
}

// runTwelve runs the twelve tasks of newGraph's shape with the writer agent, and returns the
// execution's final state.
func runTwelve(t *testing.T, repo string) *swarmrun.State {
	t.Helper()
	var doc strings.Builder
	doc.WriteString("name: twelve\ntest: sh check.sh\ndefaults: {agent: writer}\ntasks:\n")
	for i := 1; i <= 12; i++ {
		id := fmt.Sprintf("t%02d", i)
		prompt := id + ".txt=" + id
		switch id {
		case "t06", "t08":
			prompt += " shared.txt=by-" + id
		case "t10":
			prompt += " broken=red"
		}
		fmt.Fprintf(&doc, "  - {id: %s, prompt: %q, branch: feature/%s, depends_on: [%s]}\n", id, prompt, id, strings.Join(graphDeps[id], ", "))
	}
	path := filepath.Join(filepath.Dir(repo), "work.yaml")
	write(t, path, doc.String())
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sh, _ := filepath.Abs("testdata/writer.sh")
	agents, err := agent.Parse(fmt.Appendf(nil, `{"writer": {"command": %q, "terminal": false}}`, sh))
	if err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(filepath.Dir(repo), "state")
	self, _ := os.Executable()
	local := &executor.Local{N: 3, StateDir: stateDir, Self: []string{self, supervise.SuperviseVerb, "--state-dir", stateDir},
		Agents: agents, KillGrace: 2 * time.Second, HostName: "testhost"}
	res, err := swarmrun.Run(context.Background(), swarmrun.Config{Manifest: m, ManifestPath: path, Repo: repo, RepoName: ".",
		Executors: []swarmrun.Executor{local}, Log: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	return res.State
}
