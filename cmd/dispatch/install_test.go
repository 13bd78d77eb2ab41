package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// hostileDir is a directory name with every character a shell, sed or a quoted string reads:
// quotes, a command substitution, sed's & and |, a backslash, spaces.
const hostileDir = `it's "a" & $(touch pwned) ` + "`touch pwned`" + ` back\slash |pipe`

// stubBinary writes dir/name, a program that prints the path it was run by ($0): the shim
// execs the binary by its full path, so what it prints is where the shim looked.
func stubBinary(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nprintf '%s' \"$0\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// shimFinds runs the workspace script name.sh, linked to the shim at shim, as cron would (a
// bare environment, PATH without the toolkit), and returns what the binary it ran printed.
func shimFinds(t *testing.T, shim, name string) string {
	t.Helper()
	ws := t.TempDir()
	link := filepath.Join(ws, "scripts", name+".sh")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(shim, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("env", "-i", "PATH=/usr/bin:/bin", "HOME="+ws, link)
	cmd.Dir = ws
	out, err := cmd.Output()
	if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
		t.Errorf("running the shim ran a command of its BINDIR (pwned in the workspace)")
	}
	if err != nil {
		t.Errorf("%s: %v (%s)", link, err, out)
	}
	return string(out)
}

// checkSyntax runs bash -n on a script.
func checkSyntax(t *testing.T, script string) {
	t.Helper()
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Errorf("bash -n %s: %v\n%s", script, err, out)
	}
}

// TestInstallShimsAnyBindir (issue 27): install-shims.sh writes BINDIR into the installed shim
// exactly, whatever its characters. It put it through sed into a single-quoted string: a ' broke
// the shim, an & became sed's match, and '$(…)' ran a command at every call of the shim.
func TestInstallShimsAnyBindir(t *testing.T) {
	script, _ := filepath.Abs("../../scripts/install-shims.sh")
	for _, dir := range []string{hostileDir, `'$(touch pwned)'`, "new\nline", `'`, `\`, `&&`, "tab\there", "ö"} {
		base := t.TempDir()
		bindir := filepath.Join(base, dir)
		stubBinary(t, bindir, "validate-state")
		shims := filepath.Join(base, "shims")
		cmd := exec.Command(script, shims, bindir)
		cmd.Dir = base
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("install-shims.sh %q: %v\n%s", bindir, err, out)
		}
		checkSyntax(t, filepath.Join(shims, "shim.sh"))
		if got := shimFinds(t, filepath.Join(shims, "validate-state.sh"), "validate-state"); got != filepath.Join(bindir, "validate-state") {
			t.Errorf("BINDIR %q: the shim ran %q, want the binary in BINDIR", bindir, got)
		}
		if _, err := os.Stat(filepath.Join(base, "pwned")); err == nil {
			t.Errorf("BINDIR %q: installing ran a command of it", bindir)
		}
	}
}

// TestInstallHostilePrefix (issue 27): make install into a PREFIX and a BINDIR with quotes, &,
// $(…) and spaces installs there, runs nothing of them, and its shims exec the binaries in
// exactly that BINDIR.
func TestInstallHostilePrefix(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: make install builds every binary")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	repo, _ := filepath.Abs("../..")
	base := t.TempDir()
	prefix := filepath.Join(base, hostileDir)
	// Not $(PREFIX)/bin, where the shim also looks (beside its share/): only the BINDIR
	// written into it leads there.
	bindir := filepath.Join(base, "bin "+hostileDir)
	t.Cleanup(func() { os.Remove(filepath.Join(repo, "pwned")) })
	// make reads a $ in a variable as its own: $$ is a literal one.
	makeVar := func(s string) string { return strings.ReplaceAll(s, "$", "$$") }
	install := exec.Command("make", "-C", repo, "install", "PREFIX="+makeVar(prefix), "BINDIR="+makeVar(bindir),
		"GO="+filepath.Join(runtime.GOROOT(), "bin", "go"))
	install.Dir = base
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for _, d := range []string{base, repo} {
		if _, err := os.Stat(filepath.Join(d, "pwned")); err == nil {
			t.Errorf("make install ran a command of PREFIX (pwned in %s)", d)
		}
	}
	for _, f := range []string{filepath.Join(bindir, "dispatch"), filepath.Join(prefix, "share/man/man1/dispatch.1")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("make install did not install %q: %v", f, err)
		}
	}
	shim := filepath.Join(prefix, "share/fleet/scripts/shim.sh")
	checkSyntax(t, shim)
	stubBinary(t, bindir, "validate-state") // in place of the installed one, to say where it is
	if got := shimFinds(t, filepath.Join(prefix, "share/fleet/scripts/validate-state.sh"), "validate-state"); got != filepath.Join(bindir, "validate-state") {
		t.Errorf("the installed shim ran %q, want the binary in BINDIR %q", got, bindir)
	}
}
