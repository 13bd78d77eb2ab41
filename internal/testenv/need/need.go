// Package need is what a test does when a tool it hands output to is missing: one that make
// test installs (scripts/test-deps.sh, the Makefile's sshd target: pre-commit, a JUnit reader,
// man, zsh, fish, sshd). Under CI=true the test fails in one line: CI installs them all, so a
// missing one is a broken setup, and a skip there would let CI pass without the test. Elsewhere
// it skips in one line, which make test lists at its end (tools/testprogress).
//
// What cannot be installed (the ../shared compatibility corpus, the Python original's mirror,
// root) is not for this package: such a test skips with one line everywhere, CI included.
package need

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// inCI reports whether the tests run in CI (CI=true, as GitHub Actions and most CI set it).
func inCI() bool { return os.Getenv("CI") == "true" }

// Missing ends t for want of a tool, what saying which and how to install it: a failure under
// CI=true, a skip elsewhere.
func Missing(t testing.TB, what string) {
	t.Helper()
	if inCI() {
		t.Fatalf("%s (CI=true: make test installs it, as root with apt-get)", what)
	}
	t.Skip(what)
}

// Tool ends t (Missing) unless the command name is on PATH; what says what the test does with
// it and how to install it.
func Tool(t testing.TB, name, what string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		Missing(t, name+" is not installed: "+what)
	}
}

// Setup readies a script's environment for Cmd: the Setup of testscript.Params calls it.
func Setup(env *testscript.Env) {
	env.Values[scriptT{}] = env.T()
}

// scriptT is the key of the script's testscript.T among its values: a custom command has no
// other way to skip the script.
type scriptT struct{}

// Cmd is the scripts' command "need NAME WHAT...": the rest of the script needs the command
// NAME; without it the script fails under CI=true and skips elsewhere, saying WHAT (what the
// script does with it, how to install it). It replaces [!exec:NAME] skip, which skipped in CI
// too. (testscript's own skip command is not callable from here; T.Skip ends the script the
// same way, its background processes stopped by testscript's deferred cleanup.)
func Cmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: need NAME WHAT...")
	}
	if _, err := exec.LookPath(args[0]); err == nil {
		return
	}
	what := args[0] + " is not installed: " + strings.Join(args[1:], " ")
	if inCI() {
		ts.Fatalf("%s (CI=true: make test installs it, as root with apt-get)", what)
	}
	t, ok := ts.Value(scriptT{}).(testscript.T)
	if !ok {
		ts.Fatalf("need: the script's Setup did not call need.Setup")
	}
	t.Skip(what)
}
