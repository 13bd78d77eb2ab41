package mergeback

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/screen"
)

// tailLines is how many of the test's last lines a stop names.
const tailLines = 20

// tailBytes bounds the test output kept: only its end is shown.
const tailBytes = 64 << 10

// runTest runs the test command argv (no shell) in dir, in its own process group (killed whole
// when ctx ends), and returns its output's last lines, control sequences stripped, with an
// error when it failed.
func runTest(ctx context.Context, dir string, argv []string) ([]string, error) {
	out := &tail{}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The test's children (go test's binaries, make's jobs) are in its group: all are stopped.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	lines := out.lines()
	if err != nil {
		return lines, fmt.Errorf("%s: %v", strings.Join(argv, " "), err)
	}
	return lines, nil
}

// tail keeps the last tailBytes written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailBytes {
		t.b = append(t.b[:0], t.b[len(t.b)-tailBytes:]...)
	}
	return len(p), nil
}

// lines are the last tailLines non-empty lines, printable.
func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, l := range strings.Split(screen.Strip(string(t.b)), "\n") {
		l = strings.TrimRight(l, "\r \t")
		if l != "" {
			out = append(out, strings.Map(printable, l))
		}
	}
	if len(out) > tailLines {
		out = out[len(out)-tailLines:]
	}
	return out
}

func printable(r rune) rune {
	if r < 0x20 && r != '\t' || r == 0x7f {
		return ' '
	}
	return r
}
