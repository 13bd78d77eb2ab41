package git

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestCmdRun: the environment and the input reach git, the output comes back raw (Run) or
// trimmed (Output), and a failure names the command and git's last line that is not advice,
// with its exit code.
func TestCmdRun(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	c := Cmd{Dir: r.Dir, Env: []string{"GIT_AUTHOR_NAME=envname"}, Stdin: "hello\n"}
	if out, err := c.Run(ctx, "var", "GIT_AUTHOR_IDENT"); err != nil || !strings.HasPrefix(string(out), "envname ") || !strings.HasSuffix(string(out), "\n") {
		t.Errorf("Run(var GIT_AUTHOR_IDENT) = %q, %v; want the environment's name, raw", out, err)
	}
	if sha, err := c.Output(ctx, "hash-object", "--stdin"); err != nil || sha != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Errorf("Output(hash-object --stdin) = %q, %v; want the hash of the input, trimmed", sha, err)
	}
	_, err := Cmd{Dir: r.Dir}.Run(ctx, "checkout", "no-such-branch")
	var ge *Error
	if !errors.As(err, &ge) || ge.Code == 0 || ExitCode(err) != ge.Code {
		t.Fatalf("Run(checkout no-such-branch) = %v, want an *Error with git's exit code", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "git checkout no-such-branch: ") || strings.Contains(msg, "\n") || strings.Contains(msg, "hint:") {
		t.Errorf("error = %q, want the command and one line of git's", msg)
	}
	var both bytes.Buffer
	if _, err := (Cmd{Dir: r.Dir, Combined: &both}).Run(ctx, "rev-parse", "--verify", "nope"); err == nil || !strings.Contains(both.String(), "fatal:") {
		t.Errorf("Combined = %q (err %v), want git's stderr in it", both.String(), err)
	}
	if ExitCode(nil) != 0 || ExitCode(ErrNoGit) != -1 {
		t.Error("ExitCode of nil / a non-git error")
	}
}
