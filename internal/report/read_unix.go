//go:build unix

package report

import (
	"fmt"
	"io/fs"
	"syscall"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
)

// readInto reads a record file into buf's storage (grown when too small) and returns the
// contents. It is fsx.ReadFileLimit's contract (regular files only, at most record.MaxSize, the
// same errors) on the hot path of a scan of a million files: raw system calls, since os.File
// registers every file with the network poller (a failing epoll_ctl and two fcntl per open for
// a regular file), and one read when fstat has told the size, instead of reading until EOF.
// Opened non-blocking, so a FIFO left in the state directory cannot hang the scan.
func readInto(path string, buf []byte) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("not a regular file (%s)", fileType(st.Mode))
	}
	if st.Size > record.MaxSize {
		return nil, fmt.Errorf("%w: %s, over the %s limit", fsx.ErrTooLarge, fsx.HumanBytes(st.Size), fsx.HumanBytes(record.MaxSize))
	}
	want := int(st.Size)
	if cap(buf) < want+1 {
		buf = make([]byte, 0, want+512)
	}
	buf = buf[:cap(buf)]
	n := 0
	for {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		n += m
		if n > record.MaxSize {
			return nil, fmt.Errorf("%w: over the %s limit", fsx.ErrTooLarge, fsx.HumanBytes(record.MaxSize))
		}
		// Records are replaced by rename, never written in place, so once fstat's size is read
		// the file is whole; only a file that grew or shrank since needs reading to EOF.
		if m == 0 || n == want {
			return buf[:n], nil
		}
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
}

// fileType names a non-regular file's type as fs.FileMode prints it.
func fileType(mode uint32) fs.FileMode {
	switch mode & syscall.S_IFMT {
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
	}
	return fs.ModeIrregular
}
