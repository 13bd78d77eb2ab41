// Package mergeback lands the branches a run completed on its base branch: one at a time, in
// the checked merge order (git.Repo.MergeOrder), in a scratch worktree (never the user's
// checkout), the repository's test command run after each merge. The base branch moves (git
// update-ref, its old value checked) only over merges whose test passed; the first conflict or
// red test stops it, naming the branch, the conflicting files and the test's last lines, with
// the base at the last good merge. A Resolver (an agent) may be handed a conflict instead of
// stopping; its result is tested like any other merge. What merged, when and onto what is kept
// in a record (Record) beside the run's, so that the next Merge continues where one stopped.
//
// `swarm run merge` and `ralph queue merge` both call Merge with their completed branches and
// their base; they only read their flags and their run's state.
package mergeback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/record"
)

// Branch is one completed task's branch, a candidate for landing.
type Branch struct {
	ID        string
	Branch    string
	DependsOn []string
}

// Plan is what Merge is asked to do.
type Plan struct {
	// Repo is the repository's top directory.
	Repo string
	// Owner names the run the branches are of (an execution id, a plan id): it is in the
	// record and the merge commits' messages.
	Owner string
	// Base is the branch the run's tasks started from; Into the branch the merges land on
	// ("" : Base), created from Base when it is missing.
	Base, Into string
	// Branches are the completed tasks' branches, in the run's order: each is taken after
	// those of its dependencies (DependencyOrder).
	Branches []Branch
	// Test is the test command's argv (no shell), run in the scratch worktree after each
	// merge; nil runs none.
	Test []string
	// Scratch is where the scratch worktree is made; nothing at or above it below Beneath is
	// followed through a link.
	Scratch, Beneath string
	// Record is the merge record's path (Record); its directory is made below Beneath.
	Record string
	// Label starts the merge commits' messages and names their author when the repository has
	// no identity ("swarm run merge").
	Label string
	// Resolver, when set, is handed each conflict instead of stopping.
	Resolver Resolver
	// DryRun computes the plan and changes nothing.
	DryRun bool
	// Log, when set, gets a line as each merge starts and ends.
	Log io.Writer
	// Landed, when set, is told of each merge landed, once Into has moved and the record says
	// so (swarm run merge appends a merge event to the execution's events with it).
	Landed func(Merged)
}

// Conflict is a merge that stopped on conflicts in the scratch worktree Dir, left in progress
// (the conflicting files hold git's markers) for a Resolver.
type Conflict struct {
	Owner  string
	ID     string
	Branch string
	Into   string
	Files  []string
	Dir    string
}

// Resolver resolves a conflict in c.Dir: it edits the files (and may stage them, or commit
// the merge). It returns who resolved it (an agent's name), or an error when it could not.
type Resolver interface {
	Resolve(ctx context.Context, c Conflict) (by string, err error)
}

// Reasons a merge stops.
const (
	StopConflict   = "conflict"   // the branch conflicts and nobody resolved it
	StopUnresolved = "unresolved" // a Resolver was handed the conflict and did not resolve it
	StopTest       = "test"       // the test command failed after the merge
)

// Result is what Merge did (or, with DryRun, would do): the --json document of the verbs.
type Result struct {
	Owner string `json:"owner"`
	Base  string `json:"base"`
	Into  string `json:"into"`
	// Test is the test command ([] : none).
	Test   []string `json:"test"`
	DryRun bool     `json:"dry_run"`
	// Already are the tasks whose branch was on Into before this merge.
	Already []string `json:"already"`
	// Order is the tasks to land, in the order they are merged.
	Order []string `json:"order"`
	// PredictedConflict is, for a dry run, the first branch of Order that conflicts with those
	// before it (git merge-tree), when one does.
	PredictedConflict *Stop `json:"predicted_conflict,omitempty"`
	// Merged are the merges landed by this call.
	Merged []Merged `json:"merged"`
	// Stopped is why it stopped before the end of Order, null when it did not.
	Stopped *Stop `json:"stopped"`
	// Head is Into's commit at the end.
	Head string `json:"head"`
	// CheckedOut is the worktree Into is checked out in, when one is: Into is moved there as
	// git merge --ff-only moves it, the checkout's files following each merge.
	CheckedOut string `json:"checked_out,omitempty"`
}

// StoppedError is Merge stopped by a conflict or a red test: Result.Stopped says which.
type StoppedError struct{ Stop *Stop }

func (e *StoppedError) Error() string {
	s := e.Stop
	switch s.Reason {
	case StopTest:
		return fmt.Sprintf("task %s: the test failed after merging %s; %s stays at the last good merge: fix the branch (commit on it) and merge again", s.ID, s.Branch, s.Into)
	case StopUnresolved:
		return fmt.Sprintf("task %s: %s conflicts with %s in %s and the agent did not resolve it (%s); resolve it on the branch and merge again", s.ID, s.Branch, s.Into, strings.Join(s.Files, ", "), s.Detail)
	}
	return fmt.Sprintf("task %s: %s conflicts with %s in %s; merge %s into the branch (or resolve otherwise), commit, and merge again, or pass --agent NAME", s.ID, s.Branch, s.Into, strings.Join(s.Files, ", "), s.Into)
}

// ErrTestCommand is a test command that cannot be run: found neither on PATH nor in the
// repository. It is refused before anything is merged, not taken for a red test.
var ErrTestCommand = errors.New("the test command cannot be run")

// checkTest finds the test command's program: a bare name on PATH, a path as it is (a
// relative one from the repository's top, as it runs from the merged tree's).
func checkTest(repo, name string) error {
	if !strings.Contains(name, "/") {
		if _, err := exec.LookPath(name); err != nil {
			return fmt.Errorf("%w: %s is not on PATH; install it, or give its path", ErrTestCommand, name)
		}
		return nil
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(repo, path)
	}
	if fi, err := os.Stat(path); err != nil || fi.IsDir() {
		return fmt.Errorf("%w: %s is not there (a relative path is run from the top of the merged tree)", ErrTestCommand, name)
	}
	return nil
}

// ErrCheckedOut is a target branch checked out in a worktree whose files have uncommitted
// changes: the merges would be mixed with them there.
var ErrCheckedOut = errors.New("the branch is checked out with uncommitted changes")

// Merge lands p.Branches on p.Into (p.Base), as the package says. A stop is a *StoppedError
// with the Result filled; any other error leaves the branch where the last good merge put it.
func Merge(ctx context.Context, p Plan) (*Result, error) {
	if p.Into == "" {
		p.Into = p.Base
	}
	p.Branches = DependencyOrder(p.Branches)
	m := &merger{p: p, repo: gitx.Repo{Dir: p.Repo}, git: gitx.Cmd{Dir: p.Repo}}
	m.res = &Result{Owner: p.Owner, Base: p.Base, Into: p.Into, Test: append([]string{}, p.Test...), DryRun: p.DryRun,
		Already: []string{}, Order: []string{}, Merged: []Merged{}}
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	if p.DryRun {
		return m.plan(ctx)
	}
	unlock, err := lockRecord(ctx, p)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := m.plan(ctx); err != nil {
		return nil, err
	}
	if len(m.res.Order) == 0 {
		return m.res, nil
	}
	return m.res, m.land(ctx)
}

// merger is one Merge at work.
type merger struct {
	p    Plan
	repo gitx.Repo
	git  gitx.Cmd
	res  *Result
	rec  *Record
	// head is Into's commit (or Base's when Into is yet to be made: intoMissing).
	head        string
	intoMissing bool
	ident       []string
}

// check refuses, before anything is written, what Merge cannot do: a branch git would not
// read as one, a missing base or task branch, a target checked out somewhere.
func (m *merger) check(ctx context.Context) error {
	p := m.p
	for _, b := range append([]string{p.Base, p.Into}, branchNames(p.Branches)...) {
		if err := m.repo.CheckBranch(ctx, b); err != nil {
			return err
		}
	}
	base, err := m.repo.Commit(ctx, "refs/heads/"+p.Base)
	if err != nil {
		return fmt.Errorf("the base branch %s is missing: there is nothing to merge into", p.Base)
	}
	for _, b := range p.Branches {
		if _, err := m.repo.Commit(ctx, "refs/heads/"+b.Branch); err != nil {
			return fmt.Errorf("task %s: its branch %s is missing; it cannot be merged back", b.ID, b.Branch)
		}
	}
	m.head = base
	if into, err := m.repo.Commit(ctx, "refs/heads/"+p.Into); err == nil {
		m.head = into
	} else {
		m.intoMissing = true
	}
	at, err := m.repo.CheckedOutAt(ctx, p.Into)
	if err != nil {
		return err
	}
	m.res.CheckedOut = at
	if at != "" && !p.DryRun {
		if err := checkClean(ctx, at, p.Into); err != nil {
			return err
		}
	}
	m.ident = m.repo.Identity(ctx, p.Label, "mergeback@localhost")
	if len(p.Test) > 0 {
		return checkTest(p.Repo, p.Test[0])
	}
	return nil
}

// checkClean refuses a checkout of into (the user's, most often) whose tracked files have
// uncommitted changes: its files follow each merge, and git merge --ff-only would refuse (or
// carry the changes over) only when it comes to it, the first merges landed.
func checkClean(ctx context.Context, at, into string) error {
	out, err := gitx.Cmd{Dir: at}.Run(ctx, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules=dirty")
	if err != nil {
		return fmt.Errorf("reading the checkout of %s in %s: %w", into, at, err)
	}
	var files []string
	for _, l := range strings.Split(string(out), "\n") {
		if len(l) > 3 {
			files = append(files, l[3:])
		}
	}
	if len(files) == 0 {
		return nil
	}
	if len(files) > 3 {
		files = append(files[:3], fmt.Sprintf("and %d more", len(files)-3))
	}
	return fmt.Errorf("%w: %s is checked out in %s with changes not committed (%s): commit or stash them there, or land the merges on another branch with --into BRANCH", ErrCheckedOut, into, at, strings.Join(files, ", "))
}

// DependencyOrder is bs with each branch after those of its dependencies among bs, the given
// order kept otherwise (a cycle, which the runs refuse, keeps its order).
func DependencyOrder(bs []Branch) []Branch {
	in := map[string]bool{}
	for _, b := range bs {
		in[b.ID] = true
	}
	done := map[string]bool{}
	out := make([]Branch, 0, len(bs))
	for len(out) < len(bs) {
		took := false
		for _, b := range bs {
			if done[b.ID] || !depsDone(b.DependsOn, in, done) {
				continue
			}
			done[b.ID], took = true, true
			out = append(out, b)
			break
		}
		if !took {
			for _, b := range bs {
				if !done[b.ID] {
					done[b.ID] = true
					out = append(out, b)
				}
			}
		}
	}
	return out
}

func depsDone(deps []string, in, done map[string]bool) bool {
	for _, d := range deps {
		if in[d] && !done[d] {
			return false
		}
	}
	return true
}

func branchNames(bs []Branch) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Branch
	}
	return out
}

// plan reads the record and fills Already and Order: the branches not on Into yet, in the
// checked merge order, then those after the first conflict in the tasks' order.
func (m *merger) plan(ctx context.Context) (*Result, error) {
	rec, err := ReadRecord(m.p.Record)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		rec = &Record{Owner: m.p.Owner, Merges: []Merged{}}
	}
	m.rec = rec
	var todo []string
	branch, deps := map[string]string{}, map[string][]string{}
	for _, b := range m.p.Branches {
		if m.landed(ctx, b) {
			m.res.Already = append(m.res.Already, b.ID)
			continue
		}
		todo = append(todo, b.ID)
		branch[b.ID], deps[b.ID] = b.Branch, b.DependsOn
	}
	m.res.Head = m.head
	if len(todo) == 0 {
		return m.res, nil
	}
	mo, conflict, err := m.orderOnHead(ctx, todo, branch, deps)
	if err != nil {
		return nil, fmt.Errorf("checking the merge order: %w", err)
	}
	in := map[string]bool{}
	for _, id := range mo {
		in[id] = true
	}
	m.res.Order = append(m.res.Order, mo...)
	for _, id := range todo {
		if !in[id] {
			m.res.Order = append(m.res.Order, id)
		}
	}
	if conflict != nil {
		m.res.PredictedConflict = &Stop{ID: conflict.ID, Branch: conflict.Branch, Into: m.p.Into, Reason: StopConflict, Files: conflict.Files}
	}
	return m.res, nil
}

// orderOnHead is git.Repo.MergeOrder onto m.head, which MergeOrder reads as a branch: a
// missing Into is ordered onto Base, where it will be made.
func (m *merger) orderOnHead(ctx context.Context, ids []string, branch map[string]string, deps map[string][]string) ([]string, *gitx.OrderConflict, error) {
	onto := m.p.Into
	if m.intoMissing {
		onto = m.p.Base
	}
	return m.repo.MergeOrder(ctx, onto, ids, branch, deps, m.ident)
}

// landed says whether b is on Into already: its recorded merge there is one of Into's commits
// (a merge recorded on a branch reset since is not), or its branch's commit is (merged by
// hand, or a branch with no commit of its own).
func (m *merger) landed(ctx context.Context, b Branch) bool {
	if c := m.rec.landedAt(b.ID, m.p.Into); c != "" && m.onHead(ctx, c) {
		return true
	}
	tip, err := m.repo.Commit(ctx, "refs/heads/"+b.Branch)
	return err == nil && m.onHead(ctx, tip)
}

// onHead says whether commit is m.head or one of its ancestors.
func (m *merger) onHead(ctx context.Context, commit string) bool {
	_, err := m.git.Run(ctx, "merge-base", "--is-ancestor", commit, m.head)
	return err == nil
}

// land merges the Order one at a time in the scratch worktree and moves Into over each merge
// whose test passed.
func (m *merger) land(ctx context.Context) (err error) {
	p := m.p
	if err := os.MkdirAll(filepath.Dir(p.Scratch), 0o700); err != nil {
		return err
	}
	if err := m.repo.AddScratchWorktree(ctx, p.Scratch, p.Beneath, m.head); err != nil {
		return fmt.Errorf("making the scratch worktree %s: %w", p.Scratch, err)
	}
	defer func() {
		if rerr := m.repo.RemoveScratchWorktree(context.WithoutCancel(ctx), p.Scratch, p.Beneath); rerr != nil && err == nil {
			err = fmt.Errorf("removing the scratch worktree %s: %w", p.Scratch, rerr)
		}
	}()
	byID := map[string]Branch{}
	for _, b := range p.Branches {
		byID[b.ID] = b
	}
	m.rec.Stopped = nil
	for _, id := range m.res.Order {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.one(ctx, byID[id]); err != nil {
			return err
		}
	}
	return m.writeRecord()
}

// one merges b in the scratch worktree, tests it, and moves Into over it; a stop is recorded
// and returned as a *StoppedError.
func (m *merger) one(ctx context.Context, b Branch) error {
	p := m.p
	tip, err := m.repo.Commit(ctx, "refs/heads/"+b.Branch)
	if err != nil {
		return err
	}
	m.logf("merging %s (%s) into %s", b.ID, b.Branch, p.Into)
	wt := gitx.Cmd{Dir: p.Scratch}
	msg := fmt.Sprintf("%s: merge %s (task %s of %s) into %s", p.Label, b.Branch, b.ID, p.Owner, p.Into)
	resolvedBy := ""
	if _, err := wt.Run(ctx, append(append([]string{}, m.ident...), "merge", "--no-ff", "--no-edit", "-m", msg, tip)...); err != nil {
		files, _ := unmerged(ctx, wt)
		if len(files) == 0 {
			return fmt.Errorf("merging %s: %w", b.Branch, err)
		}
		stop := &Stop{ID: b.ID, Branch: b.Branch, Into: p.Into, Reason: StopConflict, Files: files}
		if p.Resolver == nil {
			wt.Run(ctx, "merge", "--abort")
			return m.stop(stop)
		}
		by, rerr := m.resolve(ctx, b, files)
		if rerr != nil {
			wt.Run(context.WithoutCancel(ctx), "merge", "--abort")
			wt.Run(context.WithoutCancel(ctx), "reset", "--hard", "--quiet", m.head)
			stop.Reason, stop.Detail = StopUnresolved, oneLine(rerr)
			return m.stop(stop)
		}
		resolvedBy = by
		m.logf("%s resolved the conflict of %s in %s", by, b.Branch, strings.Join(files, ", "))
	}
	merged, err := wt.Output(ctx, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if len(p.Test) > 0 {
		m.logf("testing %s: %s", b.ID, strings.Join(p.Test, " "))
		if tail, terr := runTest(ctx, p.Scratch, p.Test); terr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			wt.Run(context.WithoutCancel(ctx), "reset", "--hard", "--quiet", m.head)
			return m.stop(&Stop{ID: b.ID, Branch: b.Branch, Into: p.Into, Reason: StopTest, Detail: oneLine(terr), TestTail: tail, ResolvedBy: resolvedBy})
		}
	}
	return m.advance(ctx, b, tip, merged, resolvedBy)
}

// resolve hands the conflict to the Resolver and checks its work: no file left unmerged nor
// with a conflict marker; the merge is committed here unless the resolver committed it.
func (m *merger) resolve(ctx context.Context, b Branch, files []string) (string, error) {
	p := m.p
	m.logf("%s conflicts in %s: handing it to the resolver", b.Branch, strings.Join(files, ", "))
	by, err := p.Resolver.Resolve(ctx, Conflict{Owner: p.Owner, ID: b.ID, Branch: b.Branch, Into: p.Into, Files: files, Dir: p.Scratch})
	if err != nil {
		return by, err
	}
	wt := gitx.Cmd{Dir: p.Scratch}
	if _, err := wt.Run(ctx, "rev-parse", "--verify", "--quiet", "MERGE_HEAD"); err != nil {
		// The resolver committed the merge itself: HEAD must be a merge of the branch.
		if _, err := wt.Run(ctx, "merge-base", "--is-ancestor", "refs/heads/"+b.Branch, "HEAD"); err != nil {
			return by, errors.New("the merge is no longer in progress and the branch is not merged")
		}
		return by, nil
	}
	if _, err := wt.Run(ctx, "add", "-A", "--", "."); err != nil {
		return by, err
	}
	if left, _ := unmerged(ctx, wt); len(left) > 0 {
		return by, fmt.Errorf("still unmerged: %s", strings.Join(left, ", "))
	}
	if out, err := wt.Run(ctx, "diff", "--cached", "--check", "HEAD"); err != nil && strings.Contains(string(out), "conflict marker") {
		return by, errors.New("conflict markers are left in the files")
	}
	if _, err := wt.Run(ctx, append(append([]string{}, m.ident...), "commit", "--no-edit", "--no-verify", "--quiet")...); err != nil {
		return by, fmt.Errorf("committing the resolved merge: %w", err)
	}
	return by, nil
}

// advance moves Into from m.head to the tested merge (update-ref with the old value checked:
// a branch moved meanwhile by someone else stops it), and records the merge.
func (m *merger) advance(ctx context.Context, b Branch, tip, merged, resolvedBy string) error {
	p := m.p
	old := m.head
	if m.intoMissing {
		old = "" // git update-ref: the branch must not exist yet
	}
	if err := m.move(ctx, b, merged, old); err != nil {
		return err
	}
	mg := Merged{ID: b.ID, Branch: b.Branch, BranchCommit: tip, Into: p.Into, Onto: m.head, Commit: merged,
		At: record.FormatTime(time.Now()), Tested: len(p.Test) > 0, ResolvedBy: resolvedBy}
	m.head, m.intoMissing = merged, false
	m.res.Head = merged
	m.res.Merged = append(m.res.Merged, mg)
	m.rec.Merges = append(m.rec.Merges, mg)
	m.logf("landed %s on %s at %s", b.ID, p.Into, short(merged))
	if err := m.writeRecord(); err != nil {
		return err
	}
	if p.Landed != nil {
		p.Landed(mg)
	}
	return nil
}

// move points Into at merged, checking it is still at old. Where Into is checked out, it moves
// as git merge --ff-only moves it (the checkout's files follow, and it does not see the merge
// as changes undone), the checkout's hooks not run: a merge back is not the user's merge.
func (m *merger) move(ctx context.Context, b Branch, merged, old string) error {
	p := m.p
	at := m.res.CheckedOut
	if at == "" {
		if _, err := m.git.Run(ctx, "update-ref", "-m", p.Label+": merge "+b.Branch, "refs/heads/"+p.Into, merged, old); err != nil {
			return fmt.Errorf("moving %s to the merge of %s (was it moved meanwhile? merge again): %w", p.Into, b.Branch, err)
		}
		return nil
	}
	co := gitx.Cmd{Dir: at}
	if head, err := co.Output(ctx, "rev-parse", "--verify", "HEAD"); err != nil || head != old {
		return fmt.Errorf("%s moved meanwhile in %s (it is not at %s): merge again", p.Into, at, short(old))
	}
	if _, err := co.Run(ctx, "-c", "core.hooksPath=/dev/null", "merge", "--ff-only", "--quiet", merged); err != nil {
		return fmt.Errorf("moving %s in %s to the merge of %s: %s", p.Into, at, b.Branch, oneLine(err))
	}
	return nil
}

// stop records s and returns it as a *StoppedError.
func (m *merger) stop(s *Stop) error {
	s.At = record.FormatTime(time.Now())
	m.res.Stopped = s
	m.rec.Stopped = s
	if err := m.writeRecord(); err != nil {
		return err
	}
	return &StoppedError{Stop: s}
}

func (m *merger) writeRecord() error {
	m.rec.Owner = m.p.Owner
	return writeRecord(m.p, m.rec)
}

func (m *merger) logf(format string, args ...any) {
	if m.p.Log != nil {
		fmt.Fprintf(m.p.Log, format+"\n", args...)
	}
}

// unmerged are the files git left in conflict in the worktree.
func unmerged(ctx context.Context, wt gitx.Cmd) ([]string, error) {
	out, err := wt.Output(ctx, "diff", "--name-only", "--diff-filter=U")
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(out, "\n"), nil
}

func short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

// oneLine is err's message on one line.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
