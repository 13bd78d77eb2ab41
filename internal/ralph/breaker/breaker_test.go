package breaker

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gitx "github.com/agentfleet/fleet/internal/git"
)

// TestObserve: the breaker opens at the Nth iteration in a row that changed nothing, or that
// failed the same way; a change, a success or another failure starts the count again.
func TestObserve(t *testing.T) {
	type step struct {
		o    Observation
		open bool
	}
	fail := func(tree string, exit int64, tail string) Observation {
		return Observation{Tree: tree, Failed: true, Exit: exit, Tail: tail}
	}
	for name, c := range map[string]struct {
		start string
		steps []step
	}{
		"nothing changes": {"a", []step{{Observation{Tree: "a"}, false}, {Observation{Tree: "a"}, false}, {Observation{Tree: "a"}, true}}},
		"a change resets": {"a", []step{{Observation{Tree: "a"}, false}, {Observation{Tree: "a"}, false}, {Observation{Tree: "b"}, false}, {Observation{Tree: "b"}, false}, {Observation{Tree: "b"}, false}, {Observation{Tree: "b"}, true}}},
		"same failure":    {"", []step{{fail("a", 1, "y\nboom"), false}, {fail("b", 1, "y\r\nboom"), false}, {fail("c", 1, "y\nboom\n\n"), true}}},
		"other exit":      {"", []step{{fail("a", 1, "boom"), false}, {fail("b", 2, "boom"), false}, {fail("c", 1, "boom"), false}}},
		"other lines":     {"", []step{{fail("a", 1, "boom 1"), false}, {fail("b", 1, "boom 2"), false}, {fail("c", 1, "boom 3"), false}}},
		"success resets":  {"", []step{{fail("a", 1, "boom"), false}, {fail("b", 1, "boom"), false}, {Observation{Tree: "c"}, false}, {fail("d", 1, "boom"), false}}},
		"no git":          {"", []step{{Observation{}, false}, {Observation{}, false}, {Observation{}, false}, {Observation{}, false}}},
	} {
		s := State{Tree: c.start}
		for i, st := range c.steps {
			if open, why := s.Observe(st.o, 3); open != st.open {
				t.Errorf("%s: step %d: open %v (%s), want %v; state %+v", name, i+1, open, why, st.open, s)
			}
		}
	}
	s := State{Tree: "a"}
	for i := 0; i < 10; i++ {
		if open, _ := s.Observe(Observation{Tree: "a"}, 0); open {
			t.Fatalf("threshold 0 opened")
		}
	}
}

// TestFingerprint: a commit, an edit, a new file change the fingerprint; an ignored file and
// the excluded directory do not.
func TestFingerprint(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		if _, err := gitx.Run(context.Background(), dir, "", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, text string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	fp := func() string {
		t.Helper()
		f, err := Fingerprint(ctx, dir, ".aiwg")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if _, err := Fingerprint(ctx, dir); !errors.Is(err, ErrNotGit) {
		t.Errorf("outside git: %v, want ErrNotGit", err)
	}
	git("init", "-q")
	write(".gitignore", "*.log\n")
	a := fp()
	if !strings.HasPrefix(a, " ") {
		t.Errorf("on an unborn branch: %q, want HEAD \"\" and the tree", a)
	}
	if fp() != a {
		t.Errorf("the same tree twice: two fingerprints")
	}
	write("x.log", "ignored")
	write(".aiwg/state.json", "{}")
	if fp() != a {
		t.Errorf("an ignored file or the excluded directory changed the fingerprint")
	}
	write("sd/ralph/state.json", "{}")
	if f, err := Fingerprint(ctx, dir, ".aiwg", filepath.Join(dir, "sd"), t.TempDir()); err != nil || f != a {
		t.Errorf("an excluded absolute directory changed the fingerprint (%v)", err)
	}
	os.RemoveAll(filepath.Join(dir, "sd"))
	write("f.txt", "1")
	b := fp()
	if b == a {
		t.Errorf("a new file did not change it")
	}
	git("add", "f.txt")
	git("commit", "-q", "-m", "f")
	c := fp()
	if c == b {
		t.Errorf("a commit did not change it")
	}
	if head, err := (gitx.Cmd{Dir: dir}).Output(context.Background(), "rev-parse", "HEAD"); err != nil || !strings.HasPrefix(c, head+" ") {
		t.Errorf("%q does not begin with HEAD %s (%v)", c, head, err)
	}
	write("f.txt", "2")
	if fp() == c {
		t.Errorf("an edit did not change it")
	}
}

// TestFingerprintOlderGit: a git that refuses the one-process question (one older than 2.31
// has no --path-format) is asked the three questions one by one, with the same fingerprint.
func TestFingerprintOlderGit(t *testing.T) {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "a"}} {
		if _, err := gitx.Run(context.Background(), dir, "", args...); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("1"), 0o600)
	ctx := context.Background()
	want, err := Fingerprint(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	script := "#!/bin/sh\ncase \"$*\" in *--show-toplevel\\ --path-format*) echo \"error: unknown option\" >&2; exit 129 ;; esac\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if got, err := Fingerprint(ctx, dir); err != nil || got != want {
		t.Errorf("with an older git: %q, %v; want %q", got, err, want)
	}
	if _, err := Fingerprint(ctx, t.TempDir()); !errors.Is(err, ErrNotGit) {
		t.Errorf("outside git, with an older git: %v, want ErrNotGit", err)
	}
}
