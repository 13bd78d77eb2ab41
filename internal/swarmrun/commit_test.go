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
