package supervise

import (
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// rawInput puts the pane's terminal in raw input mode, so every key reaches the agent as it
// is typed: no line editing, no echo (the agent's own terminal echoes), and Ctrl-C, Ctrl-Z
// and Ctrl-\ are bytes for the agent's terminal to turn into its signals, not signals for the
// supervisor. Output processing stays on, so the supervisor's own lines still end where a
// person expects. It returns the function that restores the terminal.
func rawInput(f *os.File) (func(), error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// paneSize is the size of the terminal f, or nil when f is not one.
func paneSize(f *os.File) *pty.Winsize {
	size, err := pty.GetsizeFull(f)
	if err != nil || size.Cols == 0 || size.Rows == 0 {
		return nil
	}
	return size
}

// rawOutput turns off the output processing (OPOST, and with it ONLCR's newline translation)
// of the agent's terminal, so that what is read from it, and kept in the log, is the bytes the
// agent wrote, and the kernel does not look at every byte on the way. The translation happens
// once, where the output is shown: the pane's own terminal does it, and the screen model is
// fed as if it did.
func rawOutput(tty *os.File) error {
	fd := int(tty.Fd())
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Oflag &^= unix.OPOST | unix.ONLCR
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}
