package swarmrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTaskCommitsRunHooksAndSign: a repository with a commit-msg hook, or with commit.gpgSign,
// gets them on every task's commit, as git commit gives them: the agent that changed nothing
// (its empty commit was commit-tree's: no hook, no signature), the one that left changes and
// the one that committed itself (both were committed with --no-verify). The hook appends a
// line when it sees the task's trailers; the signer is a fake gpg.program.
func TestTaskCommitsRunHooksAndSign(t *testing.T) {
	const doc = "name: Hooks\ndefaults: {agent: fake}\ntasks:\n" +
		"  - {id: none, prompt: nothing, branch: b-none}\n" +
		"  - {id: left, prompt: \"write:left.txt\", branch: b-left}\n" +
		"  - {id: own, prompt: \"commit:own.txt\", branch: b-own}\n"
	for _, tc := range []struct {
		name       string
		hook, sign bool
	}{{"commit-msg hook", true, false}, {"gpgSign", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if tc.hook {
				hook := "#!/bin/sh\ngrep -q '^Swarm-Task-ID: ' \"$1\" && printf 'Hooked: yes\\n' >> \"$1\"\nexit 0\n"
				if err := os.WriteFile(filepath.Join(w.repo, ".git", "hooks", "commit-msg"), []byte(hook), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if tc.sign {
				gpg := filepath.Join(t.TempDir(), "fake-gpg")
				script := "#!/bin/sh\ncat >/dev/null\nprintf '\\n[GNUPG:] SIG_CREATED D 1 8 00 0 FAKE\\n' >&2\n" +
					"printf -- '-----BEGIN PGP SIGNATURE-----\\n\\nfake\\n-----END PGP SIGNATURE-----\\n'\n"
				if err := os.WriteFile(gpg, []byte(script), 0o700); err != nil {
					t.Fatal(err)
				}
				git(t, w.repo, "config", "gpg.program", gpg)
				git(t, w.repo, "config", "commit.gpgSign", "true")
			}
			res, err := Run(context.Background(), w.config(t, doc, 2))
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, w.log.String())
			}
			for _, id := range []string{"none", "left", "own"} {
				task := res.State.Tasks[id]
				if task.Status != Completed || task.Trace.CommitSHA == nil {
					t.Fatalf("%s: %s, error %+v\n%s", id, task.Status, task.Error, w.log.String())
				}
				sha := *task.Trace.CommitSHA
				obj := git(t, w.repo, "cat-file", "commit", sha)
				if !strings.Contains(obj, "Swarm-Task-ID: "+id) {
					t.Errorf("%s: the commit lacks its trailers:\n%s", id, obj)
				}
				if tc.hook && !strings.Contains(obj, "\nHooked: yes") {
					t.Errorf("%s: the commit-msg hook did not run on the task's commit:\n%s", id, obj)
				}
				if tc.sign && !strings.Contains(obj, "\ngpgsig -----BEGIN PGP SIGNATURE-----") {
					t.Errorf("%s: the task's commit is not signed (commit.gpgSign):\n%s", id, obj)
				}
			}
		})
	}
}

// TestCommitAsks: only a signature asked for or an executable commit hook (in the repository's
// hooks directory or core.hooksPath, relative to the top) takes the task's empty commit off
// commit-tree.
func TestCommitAsks(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	if commitAsks(ctx, w.repo) {
		t.Fatal("a repository with only git's sample hooks asks for git commit")
	}
	dir := filepath.Join(w.repo, ".githooks")
	os.MkdirAll(dir, 0o700)
	git(t, w.repo, "config", "core.hooksPath", ".githooks")
	os.WriteFile(filepath.Join(dir, "pre-commit"), []byte("#!/bin/sh\n"), 0o600)
	if commitAsks(ctx, w.repo) {
		t.Error("a hook that is not executable asks for git commit (git runs no such hook)")
	}
	os.Chmod(filepath.Join(dir, "pre-commit"), 0o700)
	if !commitAsks(ctx, w.repo) {
		t.Error("a pre-commit hook in a relative core.hooksPath was not seen")
	}
	git(t, w.repo, "config", "--unset", "core.hooksPath")
	git(t, w.repo, "config", "commit.gpgSign", "true")
	if !commitAsks(ctx, w.repo) {
		t.Error("commit.gpgSign was not seen")
	}
}

// TestAgentOnItsOwnBranch: an agent that switches to a branch of its own (git switch -c other)
// and commits there completes with its commit on the task's branch, which its dependent
// merges; one that switches to a branch with no history fails, the reason naming both
// branches, and records no commit (issue 27, 7).
func TestAgentOnItsOwnBranch(t *testing.T) {
	w := newWorld(t)
	doc := `name: switching agents
defaults: {agent: fake}
tasks:
  - {id: a, prompt: "switch:other commit:a.txt", branch: task-a}
  - {id: b, prompt: "write:b.txt", branch: task-b, depends_on: [a]}
  - {id: c, prompt: "orphan:stray commit:c.txt", branch: task-c}
`
	res, err := Run(context.Background(), w.config(t, doc, 2))
	if err != nil {
		t.Fatal(err)
	}
	st := res.State
	a := st.Tasks["a"]
	if a.Status != Completed || a.Trace.CommitSHA == nil {
		t.Fatalf("a = %s, error %+v", a.Status, a.Error)
	}
	if _, err := gitCmd(context.Background(), w.repo, "merge-base", "--is-ancestor", *a.Trace.CommitSHA, "refs/heads/task-a"); err != nil {
		t.Errorf("a's commit_sha %s is not on its branch task-a: %v", *a.Trace.CommitSHA, err)
	}
	if out := git(t, w.repo, "show", "refs/heads/task-a:a.txt"); out != "a" {
		t.Errorf("task-a's a.txt = %q", out)
	}
	if out := git(t, w.repo, "show", "refs/heads/task-b:a.txt"); out != "a" {
		t.Errorf("b's branch lacks a's work: a.txt = %q", out)
	}
	c := st.Tasks["c"]
	if c.Status != Failed || c.Error == nil || !strings.Contains(c.Error.Message, "branch stray") || !strings.Contains(c.Error.Message, "task-c") {
		t.Errorf("c = %s, error %+v; want failed naming stray and task-c", c.Status, c.Error)
	}
	if c.Trace != nil && c.Trace.CommitSHA != nil {
		t.Errorf("c records commit %s", *c.Trace.CommitSHA)
	}
}

// TestBranchNamedLikeATagRefused: a task's branch that a tag (or another ref git reads before
// a branch: refs/<name>) of the repository is named like is refused before anything is written:
// git merge v1, git push origin v1 take the tag (issue 27, 6).
func TestBranchNamedLikeATagRefused(t *testing.T) {
	w := newWorld(t)
	git(t, w.repo, "tag", "v1")
	_, err := Run(context.Background(), w.config(t, "name: x\ndefaults: {agent: fake}\ntasks:\n  - {id: a, prompt: p, branch: v1}\n", 1))
	var ue *UsageError
	if err == nil || !strings.Contains(err.Error(), `work.yaml:4: branch "v1" of task "a" is also the name of refs/tags/v1`) || !asUsage(err, &ue) {
		t.Errorf("Run = %v", err)
	}
	if _, serr := os.Stat(Paths{Root: w.repo}.State()); serr == nil {
		t.Errorf("a refused run left a state file")
	}
}

// TestForgePushesTheBranch: GitHub's push names the task's branch in full, so that a tag of
// the same name does not make git push refuse it ("src refspec v1 matches more than one") or
// push the tag (issue 27, 6).
func TestForgePushesTheBranch(t *testing.T) {
	w := newWorld(t)
	origin := filepath.Join(t.TempDir(), "origin.git")
	git(t, w.repo, "init", "-q", "--bare", origin)
	git(t, w.repo, "remote", "add", "origin", origin)
	git(t, w.repo, "tag", "v1")
	git(t, w.repo, "switch", "-q", "-c", "v1")
	os.WriteFile(filepath.Join(w.repo, "work.txt"), []byte("work\n"), 0o600)
	git(t, w.repo, "add", "work.txt")
	git(t, w.repo, "commit", "-q", "-m", "work")
	forge, _ := filepath.Abs("testdata/forge.sh")
	_, url, err := GitHub(forge, os.Environ()).Open(context.Background(), PRRequest{Dir: w.repo, Branch: "v1", Base: "main", Title: "t", TaskID: "a1", Execution: "x"})
	if err != nil || url == "" {
		t.Fatalf("Open = %q, %v", url, err)
	}
	if got, want := git(t, origin, "rev-parse", "refs/heads/v1"), git(t, w.repo, "rev-parse", "refs/heads/v1"); got != want {
		t.Errorf("origin's v1 = %s, want the branch's %s", got, want)
	}
}

// TestResumeKeepsTheManifestsBranch: a resumed execution's task runs on the branch the
// manifest names; a state file that names another (it is read back from the repository, where
// the agents write) is refused, and that branch is left alone: git worktree add -B would have
// reset it to the base (issue 27, 6: names read back are checked before they reach git).
func TestResumeKeepsTheManifestsBranch(t *testing.T) {
	w := newWorld(t)
	git(t, w.repo, "branch", "keep")
	git(t, w.repo, "commit", "-q", "--allow-empty", "-m", "main moves on")
	keep := git(t, w.repo, "rev-parse", "refs/heads/keep")
	doc := "name: x\ndefaults: {agent: fake}\ntasks:\n  - {id: a, prompt: fail, branch: task-a}\n"
	if _, err := Run(context.Background(), w.config(t, doc, 1)); err != nil {
		t.Fatal(err)
	}
	path := Paths{Root: w.repo}.State()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(strings.Replace(string(b), `"branch": "task-a"`, `"branch": "keep"`, 1)), 0o600)
	cfg := w.config(t, strings.Replace(doc, "fail", "write:a.txt", 1), 1)
	cfg.Resume = true
	_, err = Run(context.Background(), cfg)
	var ue *UsageError
	if err == nil || !strings.Contains(err.Error(), `"keep" in execution`) || !asUsage(err, &ue) {
		t.Errorf("Run --resume over a state naming another branch = %v", err)
	}
	if got := git(t, w.repo, "rev-parse", "refs/heads/keep"); got != keep {
		t.Errorf("the branch keep moved to %s", got)
	}
}

// TestReportEscapesHiddenCharacters: the report of a state whose names hold a bidirectional
// override or a terminal escape (the state is read back from the repository) prints them
// escaped, and a merge order naming a task the state lacks is no panic (issue 27).
func TestReportEscapesHiddenCharacters(t *testing.T) {
	sum := &Summary{SuggestedMergeOrder: []string{"a", "gone"}}
	st := &State{ExecutionID: "x", ManifestName: "n\x1b]0;pwned\a", BaseBranch: "ma\u202ein", Status: ExecCompleted, Order: []string{"a"},
		Tasks:   map[string]*Task{"a": {ID: "a", Branch: "fix/\u202egnp.exe", Status: Failed, Error: &TaskError{Message: "bad\x1b[2J"}}},
		Summary: sum}
	rep := Report(st)
	if strings.ContainsAny(rep, "\u202e\x1b\a") {
		t.Errorf("Report prints a hidden character raw:\n%q", rep)
	}
	if !strings.Contains(rep, `fix/\u202egnp.exe`) || !strings.Contains(rep, `n\x1b]0;pwned\a`) {
		t.Errorf("Report does not show the names escaped:\n%s", rep)
	}
}
