package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	fleet "github.com/agentfleet/fleet"
)

// releaseArch is the archive architecture of this machine, as make release names it; the
// tests skip where make release makes no archive.
func releaseArch(t *testing.T) (arch, runnerArch string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("release archives are for linux only")
	}
	switch runtime.GOARCH {
	case "amd64":
		return "amd64", "X64"
	case "arm64":
		return "arm64", "ARM64"
	}
	t.Skipf("no release archive for linux/%s", runtime.GOARCH)
	return "", ""
}

// fakeRelease makes, under dir/VERSION, what make release publishes for this machine: the
// archive fleet-VERSION-linux-ARCH.tar.gz (fleet-VERSION-linux-ARCH/bin/validate-state, this
// package built as release.sh builds it, and a README) and SHA256SUMS. It returns the
// archive's name.
func fakeRelease(t *testing.T, dir, version, arch string) string {
	t.Helper()
	repo, _ := filepath.Abs("../..")
	bin := filepath.Join(t.TempDir(), "validate-state")
	build := exec.Command("go", "build", "-trimpath", "-o", bin,
		"-ldflags", "-X github.com/agentfleet/fleet/internal/cli.version="+version, "./cmd/validate-state")
	build.Dir = repo
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	root := "fleet-" + version + "-linux-" + arch
	var archive bytes.Buffer
	gz := gzip.NewWriter(&archive)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		mode int64
		body []byte
	}{
		{root + "/", 0o755, nil},
		{root + "/README.md", 0o644, []byte("the toolkit\n")},
		{root + "/bin/", 0o755, nil},
		{root + "/bin/validate-state", 0o755, exe},
	} {
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	out := filepath.Join(dir, version)
	os.MkdirAll(out, 0o755)
	name := root + ".tar.gz"
	if err := os.WriteFile(filepath.Join(out, name), archive.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sums := fmt.Sprintf("%x  %s\n", sha256.Sum256(archive.Bytes()), name)
	if err := os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(sums), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// installRun is one run of the action's install step.
type installRun struct {
	out, err string // stdout, stderr
	outputs  string // what it wrote to GITHUB_OUTPUT
	failed   bool
}

// runInstall runs scripts/action-install.sh with the runner's environment and env.
func runInstall(t *testing.T, step string, env ...string) installRun {
	t.Helper()
	repo, _ := filepath.Abs("../..")
	outputs := filepath.Join(t.TempDir(), "github-output")
	cmd := exec.Command(filepath.Join(repo, "scripts", "action-install.sh"), step)
	cmd.Env = append(append(os.Environ(), "GITHUB_OUTPUT="+outputs, "RUNNER_OS=Linux", "FLEET_VERSION=", "FLEET_FROM_SOURCE="), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatal(err)
	}
	written, _ := os.ReadFile(outputs)
	return installRun{out: stdout.String(), err: stderr.String(), outputs: string(written), failed: err != nil}
}

// TestActionInstall runs the Action's install step (scripts/action-install.sh, as action.yml
// runs it) against a release archive of make release's layout: served over HTTP it is
// verified, installed and runs; then the cache serves it with the server gone; as file://
// too; a wrong checksum is refused and installs nothing; a cached archive that was changed is
// downloaded again; with no release it builds from source, and says it needs Go where there
// is none (issue 29).
func TestActionInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds validate-state")
	}
	for _, bin := range []string{"go", "curl", "tar", "sha256sum", "bash"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed", bin)
		}
	}
	arch, runnerArch := releaseArch(t)
	version := fleet.Version()
	releases := t.TempDir()
	name := fakeRelease(t, releases, version, arch)
	srv := httptest.NewServer(http.FileServer(http.Dir(releases)))
	defer srv.Close()

	// version: VERSION's by default, the input's when given, and nothing that is not one.
	if r := runInstall(t, "version"); r.failed || r.outputs != "version="+version+"\n" {
		t.Errorf("version: %+v, want version=%s", r, version)
	}
	if r := runInstall(t, "version", "FLEET_VERSION=0.9.1"); r.failed || r.outputs != "version=v0.9.1\n" {
		t.Errorf("version 0.9.1: %+v, want version=v0.9.1", r)
	}
	if r := runInstall(t, "version", "FLEET_VERSION=v1/../../x"); !r.failed || !strings.Contains(r.err, "is not a semantic version") {
		t.Errorf("version v1/../../x: %+v, want a refusal", r)
	}

	cache, bins := t.TempDir(), t.TempDir()
	env := []string{"RUNNER_ARCH=" + runnerArch, "FLEET_CACHE_DIR=" + cache, "FLEET_BIN_DIR=" + bins, "FLEET_RELEASE_URL=" + srv.URL}
	installed := func(what string, r installRun, from string) {
		t.Helper()
		if r.failed || r.outputs != "installed="+from+"\n" {
			t.Fatalf("%s: %+v, want installed=%s", what, r, from)
		}
		out, err := exec.Command(filepath.Join(bins, "validate-state"), "--version").Output()
		if err != nil || !strings.HasPrefix(string(out), "validate-state version "+version) {
			t.Fatalf("%s: the installed validate-state --version: %q, %v", what, out, err)
		}
		os.Remove(filepath.Join(bins, "validate-state"))
	}
	installed("over HTTP", runInstall(t, "install", env...), "release")
	if _, err := os.Stat(filepath.Join(cache, version, name)); err != nil {
		t.Errorf("the archive is not in the cache: %v", err)
	}

	// The cache: nothing is downloaded (the release server is not there).
	gone := append(env, "FLEET_RELEASE_URL=http://127.0.0.1:1/nowhere")
	r := runInstall(t, "install", gone...)
	installed("from the cache", r, "release")
	if !strings.Contains(r.err, name+" from the cache") {
		t.Errorf("from the cache: stderr %q does not say so", r.err)
	}

	// file://, into an empty cache.
	installed("as file://", runInstall(t, "install", append(env, "FLEET_CACHE_DIR="+t.TempDir(), "FLEET_RELEASE_URL=file://"+releases)...), "release")

	// A wrong checksum: the step fails, installs nothing and keeps nothing.
	bad := t.TempDir()
	fakeRelease(t, bad, version, arch)
	sums := filepath.Join(bad, version, "SHA256SUMS")
	if err := os.WriteFile(sums, []byte(strings.Repeat("0", 64)+"  "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCache := t.TempDir()
	r = runInstall(t, "install", append(env, "FLEET_CACHE_DIR="+badCache, "FLEET_RELEASE_URL=file://"+bad)...)
	if !r.failed || !strings.Contains(r.err, "does not match the release's SHA256SUMS: not installed") || r.outputs != "" {
		t.Errorf("a wrong checksum: %+v, want the step to fail", r)
	}
	if _, err := os.Stat(filepath.Join(bins, "validate-state")); err == nil {
		t.Error("a wrong checksum: validate-state was installed")
	}
	if _, err := os.Stat(filepath.Join(badCache, version)); err == nil {
		t.Error("a wrong checksum: the archive was kept in the cache")
	}

	// A cached archive that was changed is not used: downloaded again, and verified.
	if err := os.WriteFile(filepath.Join(cache, version, name), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runInstall(t, "install", env...)
	installed("a changed cache", r, "release")
	if !strings.Contains(r.err, "does not match its SHA256SUMS: downloading it again") {
		t.Errorf("a changed cache: stderr %q does not say so", r.err)
	}

	// No release (404, here an empty directory): built from this checkout with the go on PATH.
	noRelease := append(env, "FLEET_CACHE_DIR="+t.TempDir(), "FLEET_RELEASE_URL="+srv.URL+"/nothing")
	r = runInstall(t, "install", noRelease...)
	installed("no release", r, "source")
	if !strings.Contains(r.err, "no release "+version+" for linux/"+arch+": building from source") {
		t.Errorf("no release: stderr %q does not say so", r.err)
	}
	// ... but not for another version than this source's: that would be a lie.
	r = runInstall(t, "install", append(noRelease, "FLEET_VERSION=v0.0.9")...)
	if !r.failed || !strings.Contains(r.err, "the action's source is "+version+", not v0.0.9") || r.outputs != "" {
		t.Errorf("no release of another version: %+v, want a refusal", r)
	}
	// ... and no go on PATH: the step asks for one (the Action then runs setup-go).
	if _, err := exec.LookPath("/usr/bin/go"); err != nil {
		r = runInstall(t, "install", append(noRelease, "PATH=/usr/bin:/bin")...)
		if r.failed || r.outputs != "need-go=true\n" {
			t.Errorf("no release, no go: %+v, want need-go=true", r)
		}
	}
}

// TestReleaseRecipe runs docs/ci.md's recipe without the action (download, check the sums,
// unpack, run) against a release of the version it names, served as file:// from where the
// recipe's URL says.
func TestReleaseRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds validate-state")
	}
	for _, bin := range []string{"go", "curl", "tar", "sha256sum", "bash"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed", bin)
		}
	}
	arch, _ := releaseArch(t)
	repo, _ := filepath.Abs("../..")
	block := docBlock(t, filepath.Join(repo, "docs", "ci.md"), "      - name: validate-state from the v0.1.0 release")
	var steps []struct {
		Run string `yaml:"run"`
	}
	if err := yaml.Unmarshal([]byte(block), &steps); err != nil || len(steps) != 1 {
		t.Fatalf("docs/ci.md's recipe: %v\n%s", err, block)
	}
	const url = "https://github.com/agentfleet/fleet/releases/download"
	m := regexp.MustCompile(`v=(v[0-9.]+) arch=amd64`).FindStringSubmatch(steps[0].Run)
	if m == nil || !strings.Contains(steps[0].Run, url) {
		t.Fatalf("docs/ci.md's recipe names no version, amd64 or %s:\n%s", url, steps[0].Run)
	}
	releases := t.TempDir()
	fakeRelease(t, releases, m[1], arch)
	script := strings.ReplaceAll(steps[0].Run, url, "file://"+releases)
	script = strings.Replace(script, "arch=amd64", "arch="+arch, 1)

	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "state", "runs"), 0o755)
	os.MkdirAll(filepath.Join(ws, "state", "results"), 0o755)
	// As the runner runs a step's script.
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
	cmd.Dir = ws
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the recipe: %v\n%s\nscript:\n%s", err, out, script)
	}
}
