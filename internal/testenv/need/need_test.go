package need

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// helperTests run, in a copy of this binary, what the tests below look at from outside: a test
// that fails under CI=true cannot be looked at from inside.
var helperTests = os.Getenv("NEED_HELPER") == "1"

func TestHelperTool(t *testing.T) {
	if !helperTests {
		return
	}
	Tool(t, "sh", "runs the shell")
	Tool(t, "no-such-tool-for-need", "is what this test is about (apt-get install nothing)")
	t.Log("after the missing tool")
}

func TestHelperScript(t *testing.T) {
	if !helperTests {
		return
	}
	testscript.Run(t, testscript.Params{Files: []string{"testdata/need.txtar"},
		Setup: func(env *testscript.Env) error { Setup(env); return nil },
		Cmds:  map[string]func(*testscript.TestScript, bool, []string){"need": Cmd}})
}

// helper runs the test named in a copy of this binary, CI set to ci; its output and whether it
// passed.
func helper(t *testing.T, test, ci string) (string, bool) {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	c.Env = append(os.Environ(), "NEED_HELPER=1", "CI="+ci)
	out, err := c.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return string(out), err == nil
}

// A missing tool fails the test under CI=true, in one line, and skips it elsewhere, in one line;
// what comes after is not run; a tool that is there changes nothing.
func TestMissingToolFailsInCIAndSkipsElsewhere(t *testing.T) {
	for test, about := range map[string]string{"TestHelperTool": "test", "TestHelperScript": "script"} {
		line := "no-such-tool-for-need is not installed: is what this " + about + " is about (apt-get install nothing)"
		out, passed := helper(t, test, "true")
		if passed || !strings.Contains(out, line+" (CI=true: make test installs it, as root with apt-get)") || !strings.Contains(out, "--- FAIL: "+test) {
			t.Errorf("%s under CI=true: passed=%v, want a failure saying %q:\n%s", test, passed, line, out)
		}
		for _, ci := range []string{"", "false"} {
			out, passed = helper(t, test, ci)
			if !passed || !strings.Contains(out, line+"\n") || !strings.Contains(out, "--- SKIP: "+test) {
				t.Errorf("%s with CI=%q: passed=%v, want a skip saying %q:\n%s", test, ci, passed, line, out)
			}
		}
		if strings.Contains(out, "after the missing tool") || strings.Contains(out, "never printed") {
			t.Errorf("%s ran on after the missing tool:\n%s", test, out)
		}
	}
}
