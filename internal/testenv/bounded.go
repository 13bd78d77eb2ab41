package testenv

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// CommandBound is how long one command of a test (a tool under test, tmux) may run before
// CombinedOutput kills it: far longer than any takes, far shorter than go test's timeout, which
// would end the whole package with no cleanup and no word of the command.
const CommandBound = 40 * time.Second

// CombinedOutput runs c (made by exec.Command, not started) and returns its stdout and stderr,
// as c.CombinedOutput does, but for at most limit: then c is killed, and the error names the
// command and says it did not end. A daemon c leaves holding the output holds it 5 s at most.
func CombinedOutput(c *exec.Cmd, limit time.Duration) ([]byte, error) {
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	c.WaitDelay = 5 * time.Second
	if err := c.Start(); err != nil {
		return nil, err
	}
	timer := time.AfterFunc(limit, func() { c.Process.Kill() })
	err := c.Wait()
	if !timer.Stop() {
		err = fmt.Errorf("%s: did not end within %v (killed): %v", strings.Join(c.Args, " "), limit, err)
	}
	return out.Bytes(), err
}
