package statedir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is returned (wrapped) by ReadFile and Open for anything at a state file's path
// that is not a regular file: a symbolic link (never followed), a named pipe (opening one to
// read would wait for a writer for ever), a directory, a socket or a device.
var ErrNotRegular = errors.New("not a regular file")

// writable are the subdirectories the tools create files in, which Dir.Check checks.
var writable = [][]string{
	{runsDir}, {resultsDir}, {attemptsDir}, {logsDir}, {promptsDir}, {locksDir}, {locksDir, runsDir},
	{locksDir, resultsDir}, {supervisorsDir}, {handoffDir}, {reservesDir}, {socketsDir}, {watchDir},
	{truthsayerDir}, {cacheDir},
}

// Check returns an error unless the state directory can be written without trusting anyone
// else: the directory itself (which may be reached through a link: a workspace's state/ often
// lives on another disk) and every subdirectory the tools write in that exists are directories
// owned by this process's user, and the subdirectories are real directories, not links. Missing
// ones are fine: MkdirFor creates them, 0700. Each problem is one line that names the directory
// and says what to do.
//
// Since the directory is the user's, no one else can swap a subdirectory after the check; and
// since every file is created fresh or renamed into place, no one else's link is followed.
func (d Dir) Check() error {
	subs := make([]string, len(writable))
	for i, sub := range writable {
		subs[i] = d.join(sub...)
	}
	return checkTree(d.Root, "state directory", subs)
}

// checkTree is the rule Dir.Check and Swarm.Check share: root (which may be reached through a
// link), when it exists, is a directory of this user's, and each of subs that exists is a real
// directory of the user's. what names root in an error it cannot judge.
func checkTree(root, what string, subs []string) error {
	if root == "" {
		root = "."
	}
	fi, err := os.Stat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := checkInfo(root, fi, false); err != nil {
		return err
	}
	for _, sub := range subs {
		if err := CheckDir(sub); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// CheckDir returns an error unless dir is a real directory (not a symbolic link) owned by this
// process's user. A missing dir is an error satisfying errors.Is(err, fs.ErrNotExist).
func CheckDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	return checkInfo(dir, fi, true)
}

func checkInfo(dir string, fi fs.FileInfo, real bool) error {
	if real && fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(dir)
		return fmt.Errorf("state directory %s is a symbolic link (to %s): nothing is written through links in a state directory; make it a real directory", dir, target)
	}
	if !fi.IsDir() {
		return fmt.Errorf("state directory %s is not a directory (%s); move it away", dir, KindOf(fi.Mode()))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if uid := os.Geteuid(); ok && int(st.Uid) != uid {
		return fmt.Errorf("state directory %s belongs to uid %d, not to you (uid %d): its owner could plant links in it; chown it to yourself, or use a state directory of your own", dir, st.Uid, uid)
	}
	return nil
}

// Open opens the state file at path for reading: a regular file only, never through a final
// symbolic link, and without blocking on a named pipe (it is not read). Anything else is an
// error wrapping ErrNotRegular that says what was found; a missing file satisfies
// errors.Is(err, fs.ErrNotExist).
func Open(path string) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	switch err {
	case syscall.ELOOP:
		return nil, fmt.Errorf("%s: %w (a symbolic link, which is not followed)", path, ErrNotRegular)
	case syscall.ENXIO: // a socket, which cannot be opened
		kind := "a socket"
		if fi, err := os.Lstat(path); err == nil {
			kind = KindOf(fi.Mode())
		}
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, KindOf(modeType(st.Mode)))
	}
	// A regular file never blocks: reads through os.File need no non-blocking mode, and without
	// it the runtime does not try to register the file with its poller.
	syscall.SetNonblock(fd, false)
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile reads the state file at path as Open opens it, at most limit bytes: a larger file is
// an error, not read.
//
// It is not fsx.ReadFileLimit, on purpose: that one follows links (validate-state and
// analyze-runs are pointed at files by their users) and says "not a regular file" without a
// sentinel, while this one never follows a final link and wraps ErrNotRegular, which callers
// test for (a planted link or FIFO is refused, not an odd read error). record.ReadAt is the
// third reader, for records: O_NOFOLLOW like this one, with a memory reservation before the
// read and the system-call economy of fsx (validate-state reads tens of thousands a second).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit of such a file", path, fi.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s grew over the %d-byte limit of such a file", path, limit)
	}
	return b, nil
}

func modeType(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// KindOf names what a file mode is, for an error that says why a path was refused ("a
// symbolic link", "a named pipe", ...).
func KindOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a file"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a file"
}

// Truthsayer is where bead's Truthsayer watcher writes its findings: truthsayer/<bead>.log, as
// dispatch.sh had it.
func (d Dir) Truthsayer(bead string) string { return d.join(truthsayerDir, bead+".log") }

// AttemptFile tells the files of an attempts/<bead>/ directory apart: "run-3.json" is kind
// "run" of attempt 3, "result-3.json" kind "result", "output-3.log" kind "output".
func AttemptFile(name string) (kind string, n int, ok bool) {
	for _, k := range []struct{ kind, prefix, suffix string }{
		{"run", "run-", recordSuffix}, {"result", "result-", recordSuffix}, {"output", "output-", ".log"},
	} {
		num, found := cutAffixes(name, k.prefix, k.suffix)
		if !found || num == "" || len(num) > 9 || num[0] == '0' {
			continue
		}
		n := 0
		for _, c := range num {
			if c < '0' || c > '9' {
				n = -1
				break
			}
			n = n*10 + int(c-'0')
		}
		if n > 0 {
			return k.kind, n, true
		}
	}
	return "", 0, false
}

func cutAffixes(s, prefix, suffix string) (string, bool) {
	if len(s) < len(prefix)+len(suffix) || s[:len(prefix)] != prefix || s[len(s)-len(suffix):] != suffix {
		return "", false
	}
	return s[len(prefix) : len(s)-len(suffix)], true
}

// CreateFresh creates the file at path anew, empty, 0600 (its directory made as MkdirFor makes
// it): whatever was there (an older file, or a link planted there) is removed first, never
// followed or truncated, so that a link cannot make the caller empty or write another file.
// The caller closes it.
func CreateFresh(path string) (*os.File, error) {
	if err := MkdirFor(path); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
}
