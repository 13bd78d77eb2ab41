package fsx

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrTooLarge is returned by ReadFileLimit for files over the limit.
var ErrTooLarge = errors.New("file too large")

// ReadFileLimit reads a regular file of at most limit bytes. Anything else (a directory, a FIFO,
// a device, a file over the limit) is an error that says what it is, so one odd entry in a state
// directory never stalls or exhausts a scan of thousands.
//
// It is written against the system calls, not os.File, because validate-state reads tens of
// thousands of small files a second: open (non-blocking, so a FIFO with no writer cannot hang
// it), fstat, one read into a buffer of the file's size, close. os.ReadFile makes about eleven
// calls per file (the poller registration among them) and was a third of the time.
//
// It follows a final symbolic link: readers of a hostile state directory use statedir.ReadFile
// or record.ReadAt, which do not (see statedir.ReadFile for why there are three).
func ReadFileLimit(path string, limit int64) ([]byte, error) {
	return ReadFileAt(Cwd, path, limit, nil)
}

// Cwd stands for the current directory where ReadFileAt takes a directory descriptor.
const Cwd = -100 // AT_FDCWD

// ReadFileAt is ReadFileLimit for name relative to the open directory dirfd (or Cwd), reading
// into buf when it is large enough. A scan of one directory opens it once and reads each file by
// its name, so the kernel resolves one path component per file instead of the whole path.
func ReadFileAt(dirfd int, name string, limit int64, buf []byte) ([]byte, error) {
	return readFileAt(dirfd, name, limit, buf, 0)
}

// openRegular opens name (relative to dirfd, or Cwd) for reading, non-blocking (a FIFO with no
// writer cannot hang it) and with the extra flags (O_NOFOLLOW), and checks it is a regular file:
// the start of every bounded read here. The caller closes fd.
func openRegular(dirfd int, name string, flags int) (fd int, st syscall.Stat_t, err error) {
	for {
		fd, err = syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|flags, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.ELOOP && flags&syscall.O_NOFOLLOW != 0 {
		return -1, st, fmt.Errorf("%s is a symbolic link, which is not followed", name)
	}
	if err != nil {
		return -1, st, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, st, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return -1, st, fmt.Errorf("not a regular file (%s)", FileType(st.Mode))
	}
	return fd, st, nil
}

// readFileAt is ReadFileAt with extra open flags (O_NOFOLLOW).
func readFileAt(dirfd int, name string, limit int64, buf []byte, flags int) ([]byte, error) {
	fd, st, err := openRegular(dirfd, name, flags)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	path := name
	if st.Size > limit {
		return nil, fmt.Errorf("%w: %s, over the %s limit", ErrTooLarge, HumanBytes(st.Size), HumanBytes(limit))
	}
	// One byte more than the size: a read that fills it means the file grew since fstat.
	if int64(cap(buf)) >= st.Size+1 {
		buf = buf[:st.Size+1]
	} else {
		buf = make([]byte, st.Size+1)
	}
	n := 0
	for {
		k, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			// A regular file never blocks; one that would (/proc/kmsg, opened non-blocking so
			// that nothing hangs) is a stream, not a state file. Retrying would spin for ever.
			return nil, &os.PathError{Op: "read", Path: path, Err: errors.New("would block: not a plain file")}
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if k == 0 {
			return buf[:n], nil
		}
		n += k
		// State files are replaced by rename, never written in place: once fstat's size is in,
		// the read that would return end-of-file is one system call per file saved.
		if int64(n) == st.Size {
			return buf[:n], nil
		}
		if n == len(buf) {
			if int64(n) > limit {
				return nil, fmt.Errorf("%w: over the %s limit", ErrTooLarge, HumanBytes(limit))
			}
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
}

// FileType names what a stat mode that is not a regular file is, for an error that says why a
// file was not read ("a named pipe", "a directory", ...).
func FileType(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return "a directory"
	case syscall.S_IFIFO:
		return "a named pipe"
	case syscall.S_IFSOCK:
		return "a socket"
	case syscall.S_IFCHR, syscall.S_IFBLK:
		return "a device"
	}
	return "not a file"
}

// HumanBytes renders n as "512 B", "1.5 KiB", "50.0 MiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// StripBOM removes a leading UTF-8 byte order mark, which editors on Windows add and which
// JSON.parse (and so ajv-cli and the original jq scripts' users) accept. Every reader of state
// files goes through it, so that a BOM is accepted everywhere or nowhere.
func StripBOM(b []byte) []byte {
	return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
}

// Names lists dir: for each name, pick returns what to list (a name, or a part of it such as a
// bead id) and whether to list it; the results are sorted. It reads names only (no stat per
// entry), so listing a directory of a million records costs a string each. A missing directory
// is an error satisfying errors.Is(err, os.ErrNotExist): whether that means "none" is the
// caller's to say.
func Names(dir string, pick func(name string) (string, bool)) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, err := f.Readdirnames(-1)
	if err != nil {
		return nil, &os.PathError{Op: "readdir", Path: dir, Err: err}
	}
	names := all[:0]
	for _, n := range all {
		if listed, ok := pick(n); ok {
			names = append(names, listed)
		}
	}
	SortNames(names)
	return names, nil
}

// ReadTail reads the end of the regular file at path, at most n bytes: where an agent's log
// holds its result, its usage and its last words. Like every reader of a state directory it
// never follows a final symbolic link and never waits on a named pipe (anything but a regular
// file is an error). Unlike ReadFileLimit, a file over n bytes is not an error: its first bytes
// are skipped. A log that grows meanwhile gives what it held at the fstat.
func ReadTail(path string, n int64) ([]byte, error) {
	fd, st, err := openRegular(Cwd, path, syscall.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	off := max(st.Size-n, 0)
	buf := make([]byte, st.Size-off)
	k := 0
	for k < len(buf) {
		r, err := syscall.Pread(fd, buf[k:], off+int64(k))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if r == 0 {
			break // truncated since the fstat
		}
		k += r
	}
	return buf[:k], nil
}

// OpenRegular opens the regular file at path for reading, as the bounded readers here do:
// never through a final symbolic link, never waiting on a named pipe (anything but a regular
// file is an error). For a reader that streams a file of any size (swarm logs) in bounded
// memory.
func OpenRegular(path string) (*os.File, error) {
	fd, _, err := openRegular(Cwd, path, syscall.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ExistingAncestor is dir if it exists, else its nearest existing parent: the file system the
// directory is (or will be) on, even when dir is a mount of its own.
func ExistingAncestor(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}
