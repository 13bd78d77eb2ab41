package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Self is this program's path, for starting it again (a supervisor, a loop's monitor, an AIWG
// controller): os.Args[0] as it was started, found on PATH when it holds no slash, made
// absolute; os.Executable when it is not found there. os.Args[0] comes first because
// os.Executable resolves symbolic links, and a binary installed under another name, or a
// multi-call test binary (testscript's copies, told apart by their names), must be started by
// the name it was started with.
//
// It is the one place the toolkit reads os.Args[0]: libraries take the path as a parameter,
// from a command line that called Self.
func Self() (string, error) {
	arg0 := os.Args[0]
	if !strings.Contains(arg0, string(os.PathSeparator)) {
		p, err := exec.LookPath(arg0)
		if err != nil {
			return os.Executable()
		}
		arg0 = p
	}
	p, err := filepath.Abs(arg0)
	if err != nil {
		return "", fmt.Errorf("finding this program: %w", err)
	}
	return p, nil
}

// Detached says how StartDetached starts a process.
type Detached struct {
	// Dir is its working directory; "" is the caller's.
	Dir string
	// Env is its environment; nil is the caller's.
	Env []string
	// Output is the file its standard output and error go to (the caller opens it as it needs:
	// appended to, or new); nil is /dev/null. Its standard input is always /dev/null.
	Output *os.File
	// Files are given to it as descriptors 3, 4, …: a connection to its starter, say.
	Files []*os.File
}

// Child is a process StartDetached started.
type Child struct {
	// Pid is its pid.
	Pid int

	p    *os.Process
	done chan struct{}
}

// StartDetached starts argv in a session of its own, so that it outlives the terminal, the
// shell or the CI step that ran the caller and no signal to the caller's process group reaches
// it, with no standard input of the caller's (it would read what the user types next) and its
// output in o.Output or nowhere. While the caller runs, the child is reaped when it ends (no
// zombie); after the caller exits, init adopts it. It is how a tool starts its own supervisor,
// monitor or controller.
func StartDetached(argv []string, o Detached) (*Child, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("starting a detached process: no command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = o.Dir
	cmd.Env = o.Env
	if o.Output != nil {
		// An *os.File is given to the child as it is: no goroutine of ours copies its output.
		cmd.Stdout, cmd.Stderr = o.Output, o.Output
	}
	cmd.ExtraFiles = o.Files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{Pid: cmd.Process.Pid, p: cmd.Process, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// Done is closed once the child has ended and been reaped.
func (c *Child) Done() <-chan struct{} { return c.done }

// Kill kills the child (SIGKILL) and waits until it is reaped: for a start that is given up.
func (c *Child) Kill() {
	c.p.Kill()
	<-c.done
}
