package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestDemo runs `make demo` as a new user does and reads what it prints. Issue 20: among its
// lines was a bare "(exit 1)", after a quiet validate-state that printed nothing else; every
// exit status the demo shows now says what it means, and the demo fails if one is not what it
// expects.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the demo builds the tools and dispatches three agents")
	}
	for _, bin := range []string{"make", "tmux", "git"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed: the demo is not run", bin)
		}
	}
	repo, _ := filepath.Abs("../..")
	cmd := exec.Command("make", "-C", repo, "--no-print-directory", "demo")
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(runtime.GOROOT(), "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TMPDIR="+t.TempDir(), "NO_COLOR=1", "DEMO_KEEP=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make demo: %v\n%s", err, out)
	}
	bare := regexp.MustCompile(`(?m)^\(exit \d+\)$`)
	if m := bare.FindAll(out, -1); m != nil {
		t.Errorf("make demo prints a bare exit status (%q), saying nothing of what happened:\n%s", m, out)
	}
	said := regexp.MustCompile(`(?m)^\([a-z-]+ exited \d+: .+\)$`)
	if n := len(said.FindAll(out, -1)); n != 8 {
		t.Errorf("make demo explains %d exit statuses, want 8 (3 dispatches, 4 validate-states, analyze-runs):\n%s", n, out)
	}
	if strings.Contains(string(out), "as expected") {
		t.Errorf("make demo saw a surprise:\n%s", out)
	}
}

// TestMakeFindsGo: in a non-login shell (a script, ssh host cmd, cron) PATH lacks
// /usr/local/go/bin, and make demo failed with "go: command not found" (issue 20). make now
// takes Go from there; with no Go anywhere it says so in one line.
func TestMakeFindsGo(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	if runtime.GOROOT() != "/usr/local/go" {
		t.Skipf("Go is in %s, not /usr/local/go: the non-login shell's case does not arise", runtime.GOROOT())
	}
	repo, _ := filepath.Abs("../..")
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GO=") })
	env = append(env, "PATH=/usr/bin:/bin")
	cmd := exec.Command("make", "-C", repo, "--no-print-directory", "-n", "demo")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "GO=/usr/local/go/bin/go ") {
		t.Errorf("make -n demo with PATH=/usr/bin:/bin: %v, want it to run /usr/local/go/bin/go:\n%s", err, out)
	}

	cmd = exec.Command("make", "-C", repo, "--no-print-directory", "build", "GO=/nonexistent/go")
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	want := "make: Go not found (/nonexistent/go is not on PATH, nor in /usr/local/go/bin): install Go 1.26 (https://go.dev/dl), or name it: make GO=/path/to/go\n"
	if err == nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("make build GO=/nonexistent/go: %v\n%s\nwant the line %q", err, out, want)
	}
}
