package mergeback

import (
	"context"
	"errors"
	"fmt"
	gitx "github.com/agentfleet/fleet/internal/git"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
)

// TestMain makes the test binary the resolving agent's supervisor too, as swarm's
// `run __supervise` verb.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervise.SuperviseVerb {
		os.Exit(testenv.Supervisor(os.Args[2:], func(ctx context.Context, a cli.SupervisorArgs, _ *os.File) error {
			return attempt.Supervise(ctx, a.StateDir, a.Handoff, a.Name, os.Stdout, nil)
		}))
	}
	os.Exit(sweep.Guard(m).Run())
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitx.Cmd{Dir: dir}.Output(context.Background(), args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// runGit is git where a failure is expected (a merge stopping on its conflict).
func runGit(dir string, args ...string) error {
	_, err := gitx.Cmd{Dir: dir}.Run(context.Background(), args...)
	return err
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// graph is a repository whose main branch has a test script (check.sh fails when a file named
// broken is there) and twelve tasks' branches, each made from main with its dependencies
// merged, as swarm run makes them:
//
//	t01; t02 <- t01; t03 <- t01; t04 <- t02; t05 <- t03, t04; t06; t07 <- t06;
//	t08 (conflicts with t06 in shared.txt); t09 <- t08; t10 (adds broken: its test fails
//	when red); t11 <- t10; t12.
type graph struct {
	repo     string
	branches []Branch
}

var graphDeps = map[string][]string{"t02": {"t01"}, "t03": {"t01"}, "t04": {"t02"}, "t05": {"t03", "t04"},
	"t07": {"t06"}, "t09": {"t08"}, "t11": {"t10"}}

func newGraph(t testing.TB, red bool) *graph {
	t.Helper()
	g := &graph{repo: filepath.Join(t.TempDir(), "repo")}
	os.MkdirAll(g.repo, 0o700)
	git(t, g.repo, "init", "-q", "-b", "main")
	git(t, g.repo, "config", "user.email", "test@example.com")
	git(t, g.repo, "config", "user.name", "test")
	// As swarm run does: the user's git add -A never takes .swarm in.
	write(t, filepath.Join(g.repo, ".git", "info", "exclude"), "/.swarm/\n")
	write(t, filepath.Join(g.repo, "check.sh"), "if [ -e broken ]; then echo 'FAIL: broken is there'; exit 1; fi\necho ok\n")
	write(t, filepath.Join(g.repo, "shared.txt"), "one\ntwo\nthree\n")
	git(t, g.repo, "add", "-A")
	git(t, g.repo, "commit", "-q", "-m", "base")
	for i := 1; i <= 12; i++ {
		id := fmt.Sprintf("t%02d", i)
		b := Branch{ID: id, Branch: "feature/" + id, DependsOn: graphDeps[id]}
		git(t, g.repo, "switch", "-q", "-c", b.Branch, "main")
		for _, d := range b.DependsOn {
			git(t, g.repo, "merge", "-q", "--no-ff", "--no-edit", "refs/heads/feature/"+d)
		}
		write(t, filepath.Join(g.repo, id+".txt"), id+"\n")
		switch {
		case id == "t06":
			write(t, filepath.Join(g.repo, "shared.txt"), "one\nTWO by t06\nthree\n")
		case id == "t08":
			write(t, filepath.Join(g.repo, "shared.txt"), "one\nTWO by t08\nthree\n")
		case id == "t10" && red:
			write(t, filepath.Join(g.repo, "broken"), "red\n")
		}
		git(t, g.repo, "add", "-A")
		git(t, g.repo, "commit", "-q", "-m", "task "+id)
		g.branches = append(g.branches, b)
	}
	// The user's checkout is off main: main is moved under no checkout.
	git(t, g.repo, "switch", "-q", "--detach", "main")
	return g
}

func (g *graph) plan(t testing.TB) Plan {
	return Plan{Repo: g.repo, Owner: "exec-1", Base: "main", Branches: g.branches, Test: []string{"sh", "check.sh"},
		Scratch: filepath.Join(g.repo, ".swarm", "worktrees", "merge"), Beneath: g.repo,
		Record: filepath.Join(g.repo, ".swarm", "history", "exec-1.merge.json"), Label: "swarm run merge"}
}

// landedOn are the task ids whose merges are on branch's first-parent history, oldest first,
// and checks that the test passes on every one of them.
func landedOn(t testing.TB, repo, branch string) []string {
	t.Helper()
	var ids []string
	for _, l := range strings.Split(git(t, repo, "log", "--first-parent", "--reverse", "--format=%H %s", "refs/heads/"+branch), "\n") {
		sha, subject, _ := strings.Cut(l, " ")
		_, rest, ok := strings.Cut(subject, "(task ")
		if !ok {
			continue
		}
		ids = append(ids, strings.Fields(rest)[0])
		if runGit(repo, "cat-file", "-e", sha+":broken") == nil {
			t.Errorf("%s holds the merge %s, whose test fails", branch, subject)
		}
	}
	return ids
}

func ids(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("t%02d", i))
	}
	return out
}

// TestMergeStopsAndContinues: twelve tasks, t08 conflicting with t06 and t10's test red. The
// first merge lands the clean, green branches in the checked order up to t10 and stops there,
// naming the test's last lines; once t10 is fixed the next lands t10 to t12 and stops at t08's
// conflict, naming shared.txt; once the user merged main into t08, the last lands t08 and t09.
// main never holds t10's red merge.
func TestMergeStopsAndContinues(t *testing.T) {
	g := newGraph(t, true)
	ctx := context.Background()
	p := g.plan(t)

	dry := p
	dry.DryRun = true
	res, err := Merge(ctx, dry)
	if err != nil {
		t.Fatal(err)
	}
	wantOrder := append(append(ids(1, 7), ids(10, 12)...), "t08", "t09")
	if !reflect.DeepEqual(res.Order, wantOrder) {
		t.Fatalf("dry run order = %v, want %v", res.Order, wantOrder)
	}
	if c := res.PredictedConflict; c == nil || c.ID != "t08" || !reflect.DeepEqual(c.Files, []string{"shared.txt"}) {
		t.Fatalf("dry run predicted conflict = %+v, want t08 in shared.txt", c)
	}
	before := git(t, g.repo, "rev-parse", "main")
	if _, err := os.Stat(p.Record); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a dry run wrote the record: %v", err)
	}

	res, err = Merge(ctx, p)
	var stopped *StoppedError
	if !errors.As(err, &stopped) || stopped.Stop.Reason != StopTest || stopped.Stop.ID != "t10" || stopped.Stop.Branch != "feature/t10" {
		t.Fatalf("first merge: err = %v, want a red test at t10", err)
	}
	if tail := strings.Join(res.Stopped.TestTail, "\n"); !strings.Contains(tail, "FAIL: broken is there") {
		t.Errorf("the stop's test tail = %q, want the test's last line", tail)
	}
	if got := landedOn(t, g.repo, "main"); !reflect.DeepEqual(got, ids(1, 7)) {
		t.Fatalf("after the first merge main holds %v, want %v", got, ids(1, 7))
	}
	if head := git(t, g.repo, "rev-parse", "main"); head == before || res.Head != head {
		t.Errorf("main at %s, result head %s", head, res.Head)
	}

	// The user fixes t10 on its branch.
	git(t, g.repo, "switch", "-q", "feature/t10")
	git(t, g.repo, "rm", "-q", "broken")
	git(t, g.repo, "commit", "-q", "-m", "t10: green")
	git(t, g.repo, "switch", "-q", "--detach", "main")

	res, err = Merge(ctx, p)
	if !errors.As(err, &stopped) || stopped.Stop.Reason != StopConflict || stopped.Stop.ID != "t08" || !reflect.DeepEqual(stopped.Stop.Files, []string{"shared.txt"}) {
		t.Fatalf("second merge: err = %v, want t08's conflict in shared.txt", err)
	}
	if !reflect.DeepEqual(res.Already, ids(1, 7)) {
		t.Errorf("second merge: already = %v, want %v", res.Already, ids(1, 7))
	}
	if got := landedOn(t, g.repo, "main"); !reflect.DeepEqual(got, append(ids(1, 7), ids(10, 12)...)) {
		t.Fatalf("after the second merge main holds %v", got)
	}

	// The user resolves t08's conflict on its branch.
	git(t, g.repo, "switch", "-q", "feature/t08")
	runGit(g.repo, "merge", "-q", "main") // stops on the conflict, resolved below
	write(t, filepath.Join(g.repo, "shared.txt"), "one\nTWO by t06 and t08\nthree\n")
	git(t, g.repo, "add", "-A")
	git(t, g.repo, "commit", "-q", "--no-edit")
	git(t, g.repo, "switch", "-q", "--detach", "main")

	res, err = Merge(ctx, p)
	if err != nil {
		t.Fatalf("third merge: %v", err)
	}
	if got := landedOn(t, g.repo, "main"); !reflect.DeepEqual(got, append(append(ids(1, 7), ids(10, 12)...), "t08", "t09")) {
		t.Fatalf("after the third merge main holds %v", got)
	}
	rec, err := ReadRecord(p.Record)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Merges) != 12 || rec.Stopped != nil {
		t.Fatalf("the record has %d merges, stopped %+v; want 12, none", len(rec.Merges), rec.Stopped)
	}
	for _, m := range rec.Merges {
		if !m.Tested || m.Into != "main" {
			t.Errorf("record: %+v", m)
		}
	}
	// Nothing left: a fourth merge lands nothing and changes nothing.
	head := git(t, g.repo, "rev-parse", "main")
	if res, err = Merge(ctx, p); err != nil || len(res.Order) != 0 || git(t, g.repo, "rev-parse", "main") != head {
		t.Fatalf("fourth merge: %+v, %v", res, err)
	}
	if out := git(t, g.repo, "worktree", "list"); strings.Contains(out, "merge") {
		t.Errorf("the scratch worktree is left: %s", out)
	}
}

// TestMergeInto lands on another branch, made from the base, and leaves the base alone.
func TestMergeInto(t *testing.T) {
	g := newGraph(t, false)
	g.branches = g.branches[:5]
	p := g.plan(t)
	p.Into = "integration"
	var told []string
	p.Landed = func(m Merged) { told = append(told, m.ID) }
	base := git(t, g.repo, "rev-parse", "main")
	if _, err := Merge(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(told, ids(1, 5)) {
		t.Errorf("Landed told of %v, want %v", told, ids(1, 5))
	}
	if got := landedOn(t, g.repo, "integration"); !reflect.DeepEqual(got, ids(1, 5)) {
		t.Fatalf("integration holds %v", got)
	}
	if git(t, g.repo, "rev-parse", "main") != base {
		t.Error("main moved")
	}
}

// TestMergeMovesACheckedOutTarget: main checked out in the user's checkout (where a new user
// stands after swarm run) moves as git merge --ff-only moves it: its files hold each landed
// merge, the checkout shows no change, and a stop leaves it at the last good merge.
func TestMergeMovesACheckedOutTarget(t *testing.T) {
	g := newGraph(t, true)
	git(t, g.repo, "switch", "-q", "main")
	p := g.plan(t)
	dry := p
	dry.DryRun = true
	res, err := Merge(context.Background(), dry)
	if err != nil || res.CheckedOut != g.repo || len(res.Order) != 12 {
		t.Fatalf("dry run: %+v, %v; want the plan and the checkout named", res, err)
	}
	res, err = Merge(context.Background(), p)
	var stopped *StoppedError
	if !errors.As(err, &stopped) || stopped.Stop.ID != "t10" {
		t.Fatalf("err = %v, want the red test of t10", err)
	}
	if got := landedOn(t, g.repo, "main"); !reflect.DeepEqual(got, ids(1, 7)) {
		t.Fatalf("main holds %v, want %v", got, ids(1, 7))
	}
	if head := git(t, g.repo, "rev-parse", "HEAD"); head != res.Head || git(t, g.repo, "symbolic-ref", "HEAD") != "refs/heads/main" {
		t.Errorf("the checkout is at %s, want main at %s", head, res.Head)
	}
	if st := git(t, g.repo, "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Errorf("the checkout shows changes after the merges:\n%s", st)
	}
	for _, id := range ids(1, 7) {
		if _, err := os.Stat(filepath.Join(g.repo, id+".txt")); err != nil {
			t.Errorf("the checkout's files miss %s's: %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(g.repo, "broken")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the red merge reached the checkout: %v", err)
	}
}

// TestMergeRefusesADirtyCheckout: main checked out with a tracked file changed is not moved
// under it; nothing is written, and the change stays.
func TestMergeRefusesADirtyCheckout(t *testing.T) {
	g := newGraph(t, false)
	git(t, g.repo, "switch", "-q", "main")
	write(t, filepath.Join(g.repo, "shared.txt"), "one\nmine, not committed\nthree\n")
	before := git(t, g.repo, "rev-parse", "main")
	_, err := Merge(context.Background(), g.plan(t))
	if !errors.Is(err, ErrCheckedOut) || !strings.Contains(err.Error(), "shared.txt") {
		t.Fatalf("err = %v, want ErrCheckedOut naming shared.txt", err)
	}
	if git(t, g.repo, "rev-parse", "main") != before {
		t.Error("main moved")
	}
	if b, _ := os.ReadFile(filepath.Join(g.repo, "shared.txt")); !strings.Contains(string(b), "mine") {
		t.Errorf("the user's change is gone: %q", b)
	}
	if _, err := os.Stat(filepath.Join(g.repo, ".swarm")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("something was written: %v", err)
	}
}

// TestMergeWithAgent: the conflict of t08 goes to the fake agent, which resolves it; all
// twelve land, the resolved merge tested like the others.
func TestMergeWithAgent(t *testing.T) {
	g := newGraph(t, false)
	p := g.plan(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	sh, _ := filepath.Abs("testdata/resolve.sh")
	agents, err := agent.Parse(fmt.Appendf(nil, `{"fixer": {"command": %q, "terminal": false}}`, sh))
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	local := &executor.Local{N: 1, StateDir: stateDir, Self: []string{self, supervise.SuperviseVerb, "--state-dir", stateDir},
		Agents: agents, KillGrace: 2 * time.Second, HostName: "testhost"}
	p.Resolver = &AgentResolver{Exec: local, Agent: "fixer"}
	res, err := Merge(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(ids(1, 7), ids(10, 12)...), "t08", "t09")
	if got := landedOn(t, g.repo, "main"); !reflect.DeepEqual(got, want) {
		t.Fatalf("main holds %v, want %v", got, want)
	}
	var by string
	for _, m := range res.Merged {
		if m.ID == "t08" {
			by = m.ResolvedBy
		}
	}
	if by != "fixer" {
		t.Errorf("t08 resolved by %q, want fixer", by)
	}
	if b, err := os.ReadFile(filepath.Join(stateDir, "runs", Bead("exec-1", "t08")+".json")); err != nil || !strings.Contains(string(b), `"status":"done"`) {
		t.Errorf("the agent's run record: %v\n%s", err, b)
	}
	if got := git(t, g.repo, "show", "main:shared.txt"); strings.Contains(got, "<<<<<<<") {
		t.Errorf("main's shared.txt holds conflict markers:\n%s", got)
	}
}

// TestMergeAgentThatFails: an agent that leaves the conflict stops the merge, naming it, and
// the base is left at the last good merge.
func TestMergeAgentThatFails(t *testing.T) {
	g := newGraph(t, false)
	g.branches = []Branch{g.branches[5], g.branches[7]} // t06, t08
	p := g.plan(t)
	p.Resolver = resolverFunc(func(ctx context.Context, c Conflict) (string, error) { return "idle", nil })
	_, err := Merge(context.Background(), p)
	var stopped *StoppedError
	if !errors.As(err, &stopped) || stopped.Stop.Reason != StopUnresolved || stopped.Stop.ID != "t08" {
		t.Fatalf("err = %v, want t08 unresolved", err)
	}
	if got := landedOn(t, g.repo, "main"); !reflect.DeepEqual(got, []string{"t06"}) {
		t.Fatalf("main holds %v", got)
	}
}

type resolverFunc func(ctx context.Context, c Conflict) (string, error)

func (f resolverFunc) Resolve(ctx context.Context, c Conflict) (string, error) { return f(ctx, c) }

// TestReadRecordRefuses a record whose names or commits are not Merge's, and one through a link.
func TestReadRecordRefuses(t *testing.T) {
	dir := t.TempDir()
	good := `{"owner":"x","merges":[{"task_id":"a","branch":"b","branch_commit":"%s","into":"main","onto":"%s","commit":"%s","at":"2026-12-07T10:00:00Z","tested":true}],"stopped":null}`
	sha := strings.Repeat("a", 40)
	for name, doc := range map[string]string{
		"bad sha":     fmt.Sprintf(good, "HEAD", sha, sha),
		"option":      strings.Replace(fmt.Sprintf(good, sha, sha, sha), `"branch":"b"`, `"branch":"--force"`, 1),
		"unknown key": strings.Replace(fmt.Sprintf(good, sha, sha, sha), `"owner"`, `"x":1,"owner"`, 1),
		"no merges":   `{"owner":"x"}`,
	} {
		path := filepath.Join(dir, "r.json")
		write(t, path, doc)
		if _, err := ReadRecord(path); err == nil {
			t.Errorf("%s: ReadRecord accepted %s", name, doc)
		}
	}
	path := filepath.Join(dir, "ok.json")
	write(t, path, fmt.Sprintf(good, sha, sha, sha))
	if _, err := ReadRecord(path); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	os.Symlink(path, link)
	if _, err := ReadRecord(link); err == nil {
		t.Error("ReadRecord read through a link")
	}
}

func TestDependencyOrder(t *testing.T) {
	in := []Branch{{ID: "c", DependsOn: []string{"b"}}, {ID: "a"}, {ID: "b", DependsOn: []string{"a", "gone"}}, {ID: "d"}}
	var got []string
	for _, b := range DependencyOrder(in) {
		got = append(got, b.ID)
	}
	if want := []string{"a", "b", "c", "d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("DependencyOrder = %v, want %v", got, want)
	}
}

// TestMergeAfterTheBaseWasReset: merges recorded on a base that was reset since are not on it;
// the next merge lands them again instead of taking the record's word.
func TestMergeAfterTheBaseWasReset(t *testing.T) {
	g := newGraph(t, false)
	g.branches = g.branches[:3]
	p := g.plan(t)
	base := git(t, g.repo, "rev-parse", "main")
	if _, err := Merge(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	git(t, g.repo, "update-ref", "refs/heads/main", base)
	res, err := Merge(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Already) != 0 || len(res.Merged) != 3 {
		t.Fatalf("after the reset: already %v, merged %d; want none, 3", res.Already, len(res.Merged))
	}
	if got := landedOn(t, g.repo, "main"); !reflect.DeepEqual(got, ids(1, 3)) {
		t.Fatalf("main holds %v", got)
	}
}

// TestMergeNeverThroughALink: a link planted where the scratch worktree or the record goes is
// refused; nothing is made where it points, and the base does not move.
func TestMergeNeverThroughALink(t *testing.T) {
	for _, planted := range []string{".swarm/worktrees", ".swarm/history"} {
		t.Run(filepath.Base(planted), func(t *testing.T) {
			g := newGraph(t, false)
			g.branches = g.branches[:2]
			p := g.plan(t)
			elsewhere := t.TempDir()
			os.MkdirAll(filepath.Join(g.repo, ".swarm"), 0o700)
			if err := os.Symlink(elsewhere, filepath.Join(g.repo, planted)); err != nil {
				t.Fatal(err)
			}
			base := git(t, g.repo, "rev-parse", "main")
			if _, err := Merge(context.Background(), p); err == nil {
				t.Fatal("Merge went through a link")
			}
			if names, _ := os.ReadDir(elsewhere); len(names) > 0 {
				t.Errorf("Merge wrote %v where the link points", names)
			}
			if git(t, g.repo, "rev-parse", "main") != base {
				t.Error("main moved")
			}
		})
	}
}

// TestMergeAgentThatHangs: the resolving agent is supervised: one that hangs is stopped at its
// timeout, and the merge stops as unresolved, the base at the last good merge.
func TestMergeAgentThatHangs(t *testing.T) {
	g := newGraph(t, false)
	g.branches = []Branch{g.branches[5], g.branches[7]} // t06, t08
	p := g.plan(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	agents, err := agent.Parse([]byte(`{"hang": {"command": "/bin/sleep", "flags": ["600"], "terminal": false}}`))
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	local := &executor.Local{N: 1, StateDir: stateDir, Self: []string{self, supervise.SuperviseVerb, "--state-dir", stateDir},
		Agents: agents, KillGrace: time.Second, HostName: "testhost"}
	p.Resolver = &AgentResolver{Exec: local, Agent: "hang", Timeout: time.Second}
	_, err = Merge(context.Background(), p)
	var stopped *StoppedError
	if !errors.As(err, &stopped) || stopped.Stop.Reason != StopUnresolved || !strings.Contains(stopped.Stop.Detail, "timeout") {
		t.Fatalf("err = %v, want t08 unresolved after the agent's timeout", err)
	}
	if got := landedOn(t, g.repo, "main"); !reflect.DeepEqual(got, []string{"t06"}) {
		t.Fatalf("main holds %v", got)
	}
}
