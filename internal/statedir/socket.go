package statedir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// MaxSocketPath is the longest path bind(2) and connect(2) take for a Unix socket on Linux:
// sun_path holds 108 bytes, the last for the terminating NUL. A state directory under a deep
// workspace or a test's temp directory easily has a longer one.
const MaxSocketPath = 107

// Listener is a Unix socket listener from ListenUnix. Closing it removes the socket file by its
// real path, if the file there is still its own.
type Listener struct {
	*net.UnixListener
	path     string
	dev, ino uint64 // the socket file bound, as fstat saw it
	once     sync.Once
	closeErr error
}

// Close removes the socket file, if it is still this listener's, then stops listening; a second
// Close does nothing. The order matters: while this one listens, no other ListenUnix can take
// the path (the file is not stale), so the file removed is surely its own; closing first would
// let a newer listener of the same path (the next supervisor of a name) bind in between and
// lose its file to this Close.
func (l *Listener) Close() error {
	l.once.Do(func() {
		var rmErr error
		if l.isOwn() {
			if rmErr = os.Remove(l.path); errors.Is(rmErr, os.ErrNotExist) {
				rmErr = nil
			}
		}
		l.closeErr = l.UnixListener.Close()
		if l.closeErr == nil {
			l.closeErr = rmErr
		}
	})
	return l.closeErr
}

// isOwn reports whether the file at the listener's path is the socket it bound.
func (l *Listener) isOwn() bool {
	var st unix.Stat_t
	if err := unix.Lstat(l.path, &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFSOCK && uint64(st.Dev) == l.dev && st.Ino == l.ino
}

// Path is the socket file's path, as given to ListenUnix.
func (l *Listener) Path() string { return l.path }

// ListenUnix listens on a Unix stream socket at path, however long path is (see shortPath). A
// socket file left at path by a listener that is gone (connecting to it is refused) is replaced;
// a live one, or anything that is not a socket, is an error. The socket is made owner-only
// (0600) without following a link (ownerOnly); its directory should be private as well
// (MkdirFor).
func ListenUnix(path string) (*Listener, error) {
	var ul *net.UnixListener
	err := viaShortPath(path, func(addr string) error {
		var err error
		ul, err = net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
		if err != nil && errors.Is(err, syscall.EADDRINUSE) && stale(addr, path) {
			os.Remove(path)
			ul, err = net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	st, err := ownerOnly(path)
	if err != nil {
		ul.Close()
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	// The listener knows the socket by the short name, which means nothing once the directory's
	// descriptor is closed: Close removes it by its real path instead.
	ul.SetUnlinkOnClose(false)
	return &Listener{UnixListener: ul, path: path, dev: uint64(st.Dev), ino: st.Ino}, nil
}

// RemoveStaleSocket removes what is at path unless it is a socket someone listens on: a socket
// whose listener is gone (connecting is refused), or a file that is no socket at all. A live
// one stays: it belongs to a newer listener of the same path.
func RemoveStaleSocket(path string) {
	fi, err := os.Lstat(path)
	if err != nil {
		return
	}
	if fi.Mode().Type() != os.ModeSocket {
		os.Remove(path)
		return
	}
	viaShortPath(path, func(addr string) error {
		if stale(addr, path) {
			os.Remove(path)
		}
		return nil
	})
}

// ownerOnly makes the socket just made at path 0600 without following a link: os.Chmod would
// change whatever a link swapped in at path points to (as root, any file). The socket is opened
// as a path (O_PATH, O_NOFOLLOW), checked to be a socket, and changed through /proc/self/fd,
// since fchmod does not reach a socket's file and Linux's fchmodat has no AT_SYMLINK_NOFOLLOW
// (glibc emulates it the same way). Without /proc the mode stays the umask's, and the private
// directory alone keeps other users out.
func ownerOnly(path string) (*unix.Stat_t, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("%s was replaced by something that is not a socket", path)
	}
	err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), 0o600)
	if errors.Is(err, unix.ENOENT) {
		return &st, nil
	}
	if err != nil {
		return nil, &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	return &st, nil
}

// stale reports whether the file at path is a socket no one listens on.
func stale(addr, path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket {
		return false
	}
	c, err := net.Dial("unix", addr)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// DialUnix connects to the Unix stream socket at path, however long path is (see shortPath).
func DialUnix(ctx context.Context, path string) (net.Conn, error) {
	var c net.Conn
	err := viaShortPath(path, func(addr string) error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, "unix", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", path, err)
	}
	return c, nil
}

// viaShortPath calls use with an address for path that fits in a socket address: path itself
// when it is short enough, else /proc/self/fd/<N>/<name>, where N is a descriptor of path's
// directory opened with O_PATH (no read permission needed) and kept open until use returns. The
// kernel resolves the /proc link to the directory itself, so bind(2) and connect(2) reach the
// same file. Only the socket's own name must then be short.
func viaShortPath(path string, use func(addr string) error) error {
	if len(path) <= MaxSocketPath {
		return use(path)
	}
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	short := "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name
	if len(short) > MaxSocketPath {
		return fmt.Errorf("the socket's name %q is too long for a socket address (%d bytes with the directory's descriptor; at most %d)", name, len(short), MaxSocketPath)
	}
	if _, err := os.Stat("/proc/self/fd/" + strconv.Itoa(fd)); err != nil {
		return fmt.Errorf("the path is over %d bytes and /proc is not mounted to shorten it: %w", MaxSocketPath, err)
	}
	return use(short)
}

// shortHash is 16 hex digits of name's SHA-256: a short stand-in for a long name.
func shortHash(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:8])
}
