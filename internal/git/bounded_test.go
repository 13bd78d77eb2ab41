package git

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestOutputBounded: output past the bound is cut there (git stopped, no error); under it, it
// is whole; a failure is an *Error with git's exit code and its words.
func TestOutputBounded(t *testing.T) {
	dir := t.TempDir()
	if _, err := Run(context.Background(), dir, "", "init", "-q"); err != nil {
		t.Skip("git: ", err)
	}
	c := Cmd{Dir: dir}
	out, cut, err := c.OutputBounded(context.Background(), 5, "version")
	if err != nil || !cut || string(out) != "git v" {
		t.Errorf("OutputBounded(5, version) = %q, %v, %v; want \"git v\", cut", out, cut, err)
	}
	out, cut, err = c.OutputBounded(context.Background(), 1<<20, "version")
	if err != nil || cut || !strings.HasPrefix(string(out), "git version ") {
		t.Errorf("OutputBounded(1 MiB, version) = %q, %v, %v; want it whole", out, cut, err)
	}
	_, _, err = c.OutputBounded(context.Background(), 1<<20, "rev-parse", "--verify", "nope^{commit}")
	var ge *Error
	if !errors.As(err, &ge) || ge.Code != 128 || ge.Stderr == "" {
		t.Errorf("a failing git = %#v, want an *Error with code 128 and git's words", err)
	}
}
