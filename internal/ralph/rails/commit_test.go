package rails

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gitx "github.com/agentfleet/fleet/internal/git"
)

// TestCommit: commit-each commits the tree's changes with the loop's trailers, its own files
// left out, and returns the commit's short name; no change, no commit.
func TestCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	t.Setenv("HOME", root)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	git := func(args ...string) string {
		t.Helper()
		out, err := gitx.Cmd{Dir: repo}.Output(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	os.MkdirAll(filepath.Join(repo, ".swarm"), 0o755)
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "work.txt"), []byte("done\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".swarm", "state.json"), []byte("{}\n"), 0o644)

	short, err := Commit(ctx, repo, []string{filepath.Join(repo, ".swarm")}, "loop-1", 2)
	if err != nil || len(short) != 12 {
		t.Fatalf("Commit = %q, %v; want a 12-digit short name", short, err)
	}
	if head := git("rev-parse", "HEAD"); !strings.HasPrefix(head, short) {
		t.Errorf("Commit returned %s, HEAD is %s", short, head)
	}
	if files := git("show", "--name-only", "--format=", "HEAD"); files != "work.txt" {
		t.Errorf("committed %q, want work.txt alone (the loop's own files left out)", files)
	}
	if msg := git("log", "-1", "--format=%B"); !strings.Contains(msg, "Ralph-Loop: loop-1\nRalph-Iteration: 2") {
		t.Errorf("message %q lacks the trailers", msg)
	}
	if again, err := Commit(ctx, repo, []string{filepath.Join(repo, ".swarm")}, "loop-1", 3); again != "" || err != nil {
		t.Errorf("nothing changed: Commit = %q, %v; want no commit", again, err)
	}
	if _, err := Commit(ctx, filepath.Join(root, "not-a-repo"), nil, "loop-1", 4); err == nil {
		t.Error("Commit outside a repository did not fail")
	}
}

// TestShort: a name is cut to 12 hex digits; a shorter one is left as it is.
func TestShort(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": "abc", "0123456789abcdef": "0123456789ab"} {
		if got := Short(in); got != want {
			t.Errorf("Short(%q) = %q, want %q", in, got, want)
		}
	}
}
