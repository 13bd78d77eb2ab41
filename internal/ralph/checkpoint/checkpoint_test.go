package checkpoint

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommit: the changes are committed with the loop's trailers, the excluded directory (a
// state directory inside the tree, reached through a link) left out; no change, no commit; a
// repository with no identity gets ralph's.
func TestCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+root, "GIT_CONFIG_NOSYSTEM=1") // no identity anywhere
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	os.MkdirAll(filepath.Join(repo, "state"), 0o755)
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "state", "s.json"), []byte("{}\n"), 0o644)
	os.Symlink(filepath.Join(repo, "state"), filepath.Join(root, "state-link"))
	t.Setenv("HOME", root)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")

	head, err := Commit(ctx, repo, []string{filepath.Join(root, "state-link")}, "loop-1", 3)
	if err != nil || head == "" {
		t.Fatalf("Commit = %q, %v", head, err)
	}
	if files := git("show", "--name-only", "--format=", head); files != "a.txt" {
		t.Errorf("committed %q, want a.txt only (the state directory left out)", files)
	}
	if msg := git("log", "-1", "--format=%B"); !strings.Contains(msg, "Ralph-Loop: loop-1\nRalph-Iteration: 3") {
		t.Errorf("message %q lacks the trailers", msg)
	}
	if who := git("log", "-1", "--format=%ae"); who != "ralph@localhost" {
		t.Errorf("author %q, want ralph@localhost", who)
	}
	if again, err := Commit(ctx, repo, []string{filepath.Join(root, "state-link")}, "loop-1", 4); err != nil || again != "" {
		t.Errorf("nothing changed: Commit = %q, %v; want no commit", again, err)
	}
}
