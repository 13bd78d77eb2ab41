package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// agentProc is a running agent: its process, its terminal (nil on pipes) and the copy of its
// output.
type agentProc struct {
	cmd    *exec.Cmd
	master *os.File // the pty's master side; nil when the agent runs on pipes
	out    *os.File // what the output is read from: the master, or the pipe's read end
	done   chan *os.ProcessState
	copied chan struct{}
	// tty is the agent's terminal, identified by its device and inode (two devpts instances
	// number their terminals alike), to tell whether the agent reads it (waiting.go).
	tty fileID
	// wmu keeps writes to the terminal whole: keys from the pane, the control socket and the
	// screen model's answers come from different goroutines.
	wmu sync.Mutex
}

// defaultSize is the terminal size when there is no pane to follow: tmux's default-size.
var defaultSize = pty.Winsize{Cols: 80, Rows: 24}

// startAgent launches the agent in a session of its own (so a timeout or a kill reaches
// everything it started through its process group), on a fresh pseudo-terminal that is its
// controlling terminal, or on pipes. Its output is copied to sink until it ends.
func startAgent(a *Attempt, size *pty.Winsize, sink io.Writer) (*agentProc, error) {
	if len(a.Argv) == 0 {
		return nil, errors.New("empty command line")
	}
	if a.PromptFile != "" {
		if err := writePromptFile(a.PromptFile, a.Prompt); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(a.Argv[0], a.Argv[1:]...)
	cmd.Dir, cmd.Env = a.Dir, a.Env
	// Killed with the supervisor, so no agent outlives the process that records it.
	attrs := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	var stdin io.WriteCloser
	var err error
	if a.Stdin {
		if stdin, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
	}
	p := &agentProc{cmd: cmd, done: make(chan *os.ProcessState, 1), copied: make(chan struct{})}
	var childEnds []*os.File // the child's side of the pty or pipe, closed here once it runs
	if a.Terminal {
		master, tty, err := openPty()
		if err != nil {
			return nil, err
		}
		if size == nil {
			size = &defaultSize
		}
		pty.Setsize(master, size)
		if err := rawOutput(tty); err != nil {
			master.Close()
			tty.Close()
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = tty, tty
		attrs.Setctty, attrs.Ctty = true, 1 // fd 1 of the child: its stdin may be the prompt pipe
		if !a.Stdin {
			cmd.Stdin = tty
			attrs.Ctty = 0
		}
		p.master, p.out = master, master
		p.tty, _ = idOf(tty)
		childEnds = append(childEnds, tty)
	} else {
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = pw, pw
		p.out = pr
		childEnds = append(childEnds, pw)
	}
	cmd.SysProcAttr = attrs
	err = cmd.Start()
	for _, f := range childEnds {
		f.Close()
	}
	if err != nil {
		p.out.Close()
		return nil, err
	}
	if stdin != nil {
		go func() {
			io.WriteString(stdin, a.Prompt)
			stdin.Close() // EOF ends the prompt
		}()
	}
	go func() {
		io.Copy(sink, p.out)
		close(p.copied)
	}()
	go func() {
		ps, _ := cmd.Process.Wait()
		p.done <- ps
	}()
	return p, nil
}

func writePromptFile(path, prompt string) error {
	if err := statedir.MkdirFor(path); err != nil {
		return err
	}
	// Created fresh and renamed into place: a link planted at path is replaced, not followed.
	tmp := path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(prompt)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// openPty opens a pseudo-terminal whose master side is non-blocking and so in Go's poller (a
// blocking one can neither time out, drain's deadline, nor be interrupted by Close), and whose
// slave side is the master's own peer, taken from the master (TIOCGPTPEER, Linux 4.13), never
// opened by its path: where two devpts instances are stacked on /dev/pts (this project's CI
// machine), /dev/pts/N by path named another instance's terminal N. An agent then got "open
// /dev/pts/0: no such file or directory", or, worse, the terminal of another agent, which
// read its words (swarm's state-corrupt: p1's banner in t1's log and pane).
func openPty() (master, tty *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*os.File, *os.File, error) {
		unix.Close(fd)
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		return fail(fmt.Errorf("unlocking the pseudo-terminal: %w", err))
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		return fail(fmt.Errorf("naming the pseudo-terminal: %w", err))
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	slave := int(sfd)
	if errno != 0 {
		if errno != unix.EINVAL && errno != unix.ENOTTY {
			return fail(fmt.Errorf("opening the pseudo-terminal's peer: %w", errno))
		}
		// A kernel before 4.13: by its path, the one way there is.
		if slave, err = unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err != nil {
			return fail(err)
		}
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(slave)
		return fail(err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), os.NewFile(uintptr(slave), name), nil
}

// pid is the agent's pid, which is also its process group and session id.
func (p *agentProc) pid() int { return p.cmd.Process.Pid }

// stop sends the agent's process group SIGTERM, then SIGKILL after grace, and returns its end.
// With hangUp it first sends SIGHUP, as a closing terminal does (tmux's kill-window, what the
// originals' kill did): an interactive shell, which ignores SIGTERM, then ends at once instead
// of at the grace's SIGKILL.
// exited returns the agent's exit status when it has exited already: reaped (its status
// waits in done), or a zombie not yet reaped (waitid without reaping says so; its status
// then comes through done at once).
func (p *agentProc) exited() (*os.ProcessState, bool) {
	select {
	case ps := <-p.done:
		return ps, true
	default:
	}
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, p.pid(), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err != nil && !errors.Is(err, syscall.ECHILD) {
		return nil, false
	}
	if err == nil && info.Signo == 0 {
		return nil, false // still running (Linux zeroes info when no child is waitable)
	}
	// Exited (or reaped just now by done's goroutine: ECHILD).
	return <-p.done, true
}

func (p *agentProc) stop(grace time.Duration, hangUp bool) *os.ProcessState {
	if hangUp {
		syscall.Kill(-p.pid(), syscall.SIGHUP)
	}
	syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case ps := <-p.done:
		return ps
	case <-time.After(grace):
	}
	syscall.Kill(-p.pid(), syscall.SIGKILL)
	return <-p.done
}

// drainWait is how long drain waits for the end of the output, once the pane is let go,
// before cutting it off.
const drainWait = 5 * time.Second

// drain waits for the output copy to reach the end, but not for long: a process that escaped
// the reaping and still holds the terminal or pipe could keep it open forever. The copy may be
// waiting on the pane (mirror): after paneWait, letGo releases it, and the rest of the output
// goes to the log alone.
func (p *agentProc) drain(letGo func()) {
	select {
	case <-p.copied:
		p.out.Close()
		return
	case <-time.After(paneWait):
	}
	letGo()
	select {
	case <-p.copied:
	// The stragglers are stopped by now, so the end comes at once; the wait is long only for a
	// machine so loaded that the copy has not been scheduled yet (output must not be cut).
	case <-time.After(drainWait):
		p.out.SetReadDeadline(time.Now())
		select {
		case <-p.copied:
		case <-time.After(time.Second):
		}
	}
	p.out.Close()
}

// write types b into the agent's terminal, as keys from the pane would arrive.
func (p *agentProc) write(b []byte) error {
	if p.master == nil {
		return errors.New("the agent has no terminal (its profile says \"terminal\": false)")
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, err := p.master.Write(b)
	return err
}

// canonLine is how long a line the agent's terminal takes in canonical (cooked) mode: Linux's
// N_TTY_BUF_SIZE less the byte kept for the newline. Past it, what is typed is dropped.
const canonLine = 4095

// canonPiece is how much of a line typeText types before pushing it to the reader: under
// canonLine, with room for what the line may already hold (a send with --raw).
const canonPiece = 3072

// typeText types text into the agent's terminal as write does; when the terminal is in
// canonical mode (a shell's read, a program that reads lines), a line longer than it takes is
// typed in pieces, each pushed to the reader with the terminal's EOF character (Ctrl-D) as
// the line discipline allows: Ctrl-D after some text hands that text to read() without a
// newline and without ending the input, so a reader that reads to the newline gets the line
// whole (the kernel cut it at 4,095 bytes). A terminal with no EOF character cannot take such
// a line: that is an error, and nothing is typed.
func (p *agentProc) typeText(text string) error {
	if p.master == nil {
		return p.write([]byte(text))
	}
	var t *unix.Termios
	if rc, err := p.master.SyscallConn(); err == nil {
		// Not Fd(): it would turn the master back to blocking.
		rc.Control(func(fd uintptr) { t, _ = unix.IoctlGetTermios(int(fd), unix.TCGETS) })
	}
	if t == nil || t.Lflag&unix.ICANON == 0 {
		return p.write([]byte(text))
	}
	crEnds := t.Iflag&unix.ICRNL != 0 && t.Iflag&unix.IGNCR == 0
	eof := t.Cc[unix.VEOF]
	b, err := splitLines(text, canonPiece, crEnds, eof)
	if err != nil {
		return err
	}
	return p.write(b)
}

// splitLines is text with eof inserted after every piece of piece bytes of a line (cut at a
// UTF-8 character's start) that goes on after it. A line ends at a newline, and at a carriage
// return when crEnds. An eof of 0 (disabled) with a line too long for canonLine is an error.
func splitLines(text string, piece int, crEnds bool, eof byte) ([]byte, error) {
	out := make([]byte, 0, len(text)+len(text)/piece+1)
	n := 0 // bytes of the current line typed since the last push
	for i := 0; i < len(text); {
		c := text[i]
		if c == '\n' || (c == '\r' && crEnds) {
			out = append(out, c)
			n = 0
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		if n+size > piece {
			if eof == 0 {
				if longest(text, crEnds) > canonLine {
					return nil, fmt.Errorf("the agent's terminal reads lines (canonical mode) of at most %d bytes and has no EOF character to hand over a longer line in pieces: nothing was typed", canonLine)
				}
				return []byte(text), nil
			}
			out = append(out, eof)
			n = 0
		}
		out = append(out, text[i:i+size]...)
		n += size
		i += size
	}
	return out, nil
}

// longest is the length of text's longest line.
func longest(text string, crEnds bool) int {
	most, n := 0, 0
	for i := 0; i < len(text); i++ {
		if c := text[i]; c == '\n' || (c == '\r' && crEnds) {
			n = 0
			continue
		}
		n++
		most = max(most, n)
	}
	return most
}

// resize sets the agent's terminal size; the kernel sends it SIGWINCH.
func (p *agentProc) resize(size *pty.Winsize) {
	if p.master != nil {
		pty.Setsize(p.master, size)
	}
}

// exited turns the agent's end into an outcome: done only for exit 0.
func exited(ps *os.ProcessState) Outcome {
	if ps == nil {
		return Outcome{Status: StatusFailed, ExitCode: 1, Reason: "agent-wait-failed"}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		return Outcome{Status: StatusFailed, ExitCode: 128 + int64(sig), Reason: "agent-signal-" + SignalName(sig)}
	}
	code := int64(ps.ExitCode())
	status := StatusFailed
	if code == 0 {
		status = StatusDone
	}
	return Outcome{Status: status, ExitCode: code, Reason: exitReason(code)}
}
