package supervise

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Waiting for input: the supervisor tells, from the terminal it already holds, that the agent
// waits for a person to answer. Three things must hold at once, so that an agent busy
// printing is never taken for one that waits:
//   - the output has been quiet for inputQuiet;
//   - the screen's cursor stands at the end of the last row with text, and that row looks like
//     a prompt (promptLike);
//   - the terminal's foreground process (its foreground process group's leader, which is who a
//     shell gives the terminal to) is asleep in a read of the terminal, or in a poll or select
//     with the terminal as its standard input: /proc/PID/syscall names the system call a
//     sleeping process is blocked in and its first argument (the file descriptor of a read),
//     and /proc/PID/fd/N says which file that is. Where that file cannot be read (another
//     architecture, a process we may not trace), its wait channel (/proc/PID/wchan) is looked at
//     instead.
//
// A printing agent fails the first (and is running, or asleep in a write, not a read); a
// program the agent started and waits for (bash running a command) holds the foreground, and
// is not reading the terminal.

// inputQuiet is how long the output must have been quiet before the agent is looked at.
const inputQuiet = 700 * time.Millisecond

// inputLookEvery is how often a quiet agent is looked at again.
const inputLookEvery = 500 * time.Millisecond

// promptLike tells whether a row of the screen ends as prompts end: "$ ", "> ", ">>> ", "# ",
// "% ", "❯ ", "Password: ", "Continue? ", "(y/n) ", "[Y/n] ", and Python's "... ".
func promptLike(row string) bool {
	t := strings.TrimRight(row, " ")
	if t == "" {
		return false
	}
	if strings.HasSuffix(t, "...") {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(t)
	return strings.ContainsRune(">$#%:?)]❯»›", r)
}

// fileID identifies a file: its device and inode.
type fileID struct{ dev, ino uint64 }

func idOf(f *os.File) (fileID, error) {
	fi, err := f.Stat()
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("%s: no device and inode", f.Name())
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// promptLook remembers whether the screen showed a prompt at the last look, and at what
// count of output bytes: a quiet agent is looked at every inputLookEvery, and its screen is
// read again only when it printed since.
type promptLook struct {
	written int64
	prompt  bool
}

// shown tells whether the screen shows a prompt with the cursor after it, at the end.
func (l *promptLook) shown(scr *screenSink) bool {
	n := scr.Written()
	if n == l.written && n > 0 {
		return l.prompt
	}
	row, atEnd, last := scr.CursorRow()
	l.written, l.prompt = n, atEnd && last && promptLike(row)
	return l.prompt
}

// waitingForInput tells whether the agent waits for input: its screen shows a prompt with the
// cursor after it, and its terminal's foreground process is blocked reading the terminal.
// The caller has seen the output quiet.
func (p *agentProc) waitingForInput(scr *screenSink, look *promptLook) bool {
	if p.master == nil || p.tty == (fileID{}) || !look.shown(scr) {
		return false
	}
	pgid, err := unix.IoctlGetInt(int(p.master.Fd()), unix.TIOCGPGRP)
	if err != nil || pgid <= 0 {
		return false
	}
	return readsTerminal(pgid, p.tty)
}

// readsTerminal tells whether the process pid is asleep reading the terminal tty.
func readsTerminal(pid int, tty fileID) bool {
	stat, err := readProc(pid, "stat")
	// The state follows the command's closing parenthesis (the command may hold any byte).
	i := bytes.LastIndexByte(stat, ')')
	if err != nil || i < 0 || i+2 >= len(stat) || stat[i+2] != 'S' {
		return false
	}
	if call, err := readProc(pid, "syscall"); err == nil && sysRead != nil {
		f := strings.Fields(string(call))
		if len(f) < 2 {
			return false // "running", or a process not in a system call
		}
		nr, err1 := strconv.Atoi(f[0])
		fd, err2 := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 32)
		switch {
		case err1 != nil || err2 != nil:
			return false
		case sysRead[nr]:
			return fdIs(pid, int(fd), tty)
		case sysPoll[nr]:
			return fdIs(pid, 0, tty)
		}
		return false
	}
	wchan, err := readProc(pid, "wchan")
	if err != nil {
		return false
	}
	for _, w := range []string{"n_tty_read", "wait_woken", "poll_schedule_timeout", "do_select", "ep_poll"} {
		if bytes.HasPrefix(wchan, []byte(w)) {
			return fdIs(pid, 0, tty)
		}
	}
	return false
}

// fdIs tells whether pid's file descriptor fd is the file id.
func fdIs(pid, fd int, id fileID) bool {
	var st syscall.Stat_t
	if syscall.Stat(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), &st) != nil {
		return false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino} == id
}

// readProc reads /proc/PID/name, a small file of the kernel's, with a bound.
func readProc(pid int, name string) ([]byte, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/%s", pid, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4096))
}
