package fleet

import (
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	gitx "github.com/agentfleet/fleet/internal/git"
)

// TestVersionFile: VERSION holds one semantic version, without the tags' "v", on one line:
// release.sh and the Action (scripts/action-install.sh) read it as a tag and in URLs.
func TestVersionFile(t *testing.T) {
	b, err := os.ReadFile("VERSION")
	if err != nil {
		t.Fatal(err)
	}
	semver := regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?\n$`)
	if !semver.Match(b) {
		t.Errorf("VERSION is %q, want one semantic version without a v, and a newline (0.1.0)", b)
	}
	if got, want := Version(), "v"+strings.TrimSpace(string(b)); got != want {
		t.Errorf("Version() = %q, want %q", got, want)
	}
}

// TestVersionWithoutGit builds validate-state from a copy of the tree as a source archive has
// it (no .git, no make, no linker flag) and asks its --version: the VERSION file's version,
// where it printed "devel". Then the same copy as a git checkout: the version with the commit,
// and ".dirty" with local changes (issue 29).
func TestVersionWithoutGit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds validate-state twice")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	src := t.TempDir()
	copyTree(t, ".", src)
	want := "validate-state version " + Version() + "\n"
	if got := buildVersion(t, goBin, src); got != want {
		t.Errorf("built from a copy without .git: %q, want %q", got, want)
	}

	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the checkout's version is not checked")
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := gitx.Run(context.Background(), src, "", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "the tree")
	commit := git("rev-parse", "HEAD")[:12]
	if got, want := buildVersion(t, goBin, src), "validate-state version "+Version()+"+"+commit+"\n"; got != want {
		t.Errorf("built in a git checkout: %q, want %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := buildVersion(t, goBin, src), "validate-state version "+Version()+"+"+commit+".dirty\n"; got != want {
		t.Errorf("built in a git checkout with local changes: %q, want %q", got, want)
	}
}

// buildVersion builds src's validate-state as a bare `go build` does and returns its --version.
func buildVersion(t *testing.T, goBin, src string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "validate-state")
	build := exec.Command(goBin, "build", "-o", bin, "./cmd/validate-state")
	build.Dir = src
	// As Go's defaults have it: a GOFLAGS of the environment or of go env -w (-buildvcs=false,
	// say) would decide what is tested.
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=auto", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", src, err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("validate-state --version: %v", err)
	}
	return string(out)
}

// copyTree copies the sources of the tree at from into to: regular files and directories only,
// without .git (a checkout's, or a worktree's link to it), the build outputs and the tests' data.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	skip := map[string]bool{".git": true, "bin": true, "dist": true, "share": true, "testdata": true}
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		switch {
		case skip[d.Name()] && rel != ".":
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		return copyFile(path, dst)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
