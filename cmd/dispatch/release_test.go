package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVersionFromGit: the version make's builds stamp (what --version prints) and the one
// make release takes, in a scratch repository with the Makefile and release script: a commit
// with no tag, a tag that is not a version, a semantic version tag, local changes (issue 20).
func TestVersionFromGit(t *testing.T) {
	for _, bin := range []string{"make", "git"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed", bin)
		}
	}
	repo, _ := filepath.Abs("../..")
	dir := t.TempDir()
	for _, f := range []string{"Makefile", "scripts/release.sh"} {
		b, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	stamp := regexp.MustCompile(`internal/cli\.version=(\S+?)'`)
	version := func() string {
		t.Helper()
		cmd := exec.Command("make", "--no-print-directory", "-n", "build", "GO=go")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		m := stamp.FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("make -n build: %v\n%s", err, out)
		}
		return string(m[1])
	}
	release := func() string {
		t.Helper()
		cmd := exec.Command("./scripts/release.sh")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GO=false", "VERSION=")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes"), []byte("first\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "first")

	if v := version(); !regexp.MustCompile(`^[0-9a-f]{7,}$`).MatchString(v) {
		t.Errorf("untagged: the build's version = %q, want the commit", v)
	}
	want := "release: HEAD (" + version() + ") has no version tag; tag it first: git tag -a v0.1.0 -m v0.1.0\n"
	if out := release(); out != want {
		t.Errorf("untagged: make release says %q, want %q", out, want)
	}
	git("tag", "nightly") // not a version: neither the builds nor a release take it
	if v := version(); v == "nightly" || strings.HasPrefix(v, "nightly") {
		t.Errorf("tagged nightly: the build's version = %q, want the commit", v)
	}
	if out := release(); !strings.Contains(out, "has no version tag") {
		t.Errorf("tagged nightly: make release says %q, want the refusal", out)
	}
	git("tag", "-a", "v0.1.0", "-m", "v0.1.0")
	if v := version(); v != "v0.1.0" {
		t.Errorf("tagged v0.1.0: the build's version = %q, want v0.1.0", v)
	}
	if out := release(); strings.Contains(out, "no version tag") || strings.Contains(out, "local changes") {
		t.Errorf("tagged v0.1.0: make release refused: %q", out)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != "v0.1.0-dirty" {
		t.Errorf("tagged v0.1.0 with local changes: the build's version = %q, want v0.1.0-dirty", v)
	}
	if out := release(); !strings.Contains(out, "the checkout has local changes") {
		t.Errorf("tagged v0.1.0 with local changes: make release says %q, want the refusal", out)
	}
}
