package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	gitx "github.com/agentfleet/fleet/internal/git"
)

// TestVersionFromGit: the version make's builds stamp (what --version prints) and the one
// make release takes, in a scratch repository with the Makefile, the release script and a
// VERSION file (0.1.0): a commit with no tag (nothing stamped: the binaries say VERSION's), a
// tag that is not a version, a version tag that is not VERSION's, VERSION's tag, local changes
// (issues 20 and 29).
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
		if _, err := gitx.Run(context.Background(), dir, "", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte("0.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stamp := regexp.MustCompile(`internal/cli\.version=(\S+?)'`)
	// version is what make build stamps, "" for nothing.
	version := func() string {
		t.Helper()
		cmd := exec.Command("make", "--no-print-directory", "-n", "build", "GO=go")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "go build") {
			t.Fatalf("make -n build: %v\n%s", err, out)
		}
		if m := stamp.FindSubmatch(out); m != nil {
			return string(m[1])
		}
		return ""
	}
	describe := func() string {
		t.Helper()
		out, err := gitx.Cmd{Dir: dir}.Output(context.Background(), "describe", "--always", "--dirty")
		if err != nil {
			t.Fatal(err)
		}
		return out
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

	if v := version(); v != "" {
		t.Errorf("untagged: the build stamps %q, want nothing (the binaries say VERSION's, with the commit)", v)
	}
	want := "release: HEAD (" + describe() + ") has no version tag; tag it first: git tag -a v0.1.0 -m v0.1.0\n"
	if out := release(); out != want {
		t.Errorf("untagged: make release says %q, want %q", out, want)
	}
	git("tag", "nightly") // not a version: neither the builds nor a release take it
	if v := version(); v != "" {
		t.Errorf("tagged nightly: the build stamps %q, want nothing", v)
	}
	if out := release(); !strings.Contains(out, "has no version tag") {
		t.Errorf("tagged nightly: make release says %q, want the refusal", out)
	}
	git("tag", "-a", "v0.2.0", "-m", "v0.2.0") // a version, not VERSION's: binaries would say v0.1.0
	want = "release: the tag v0.2.0 is not the VERSION file's v0.1.0; a release's binaries say what VERSION says: change VERSION in a commit and tag that commit\n"
	if out := release(); out != want {
		t.Errorf("tagged v0.2.0, VERSION 0.1.0: make release says %q, want %q", out, want)
	}
	git("tag", "-d", "v0.2.0")
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
