package supervise

import (
	"fmt"
	"golang.org/x/sys/unix"
	"net"
	"os"
	"path/filepath"
	"time"
)

// maxSocketPath is the longest path a Unix socket address holds (sun_path is 108 bytes with
// its terminating NUL). State directories under a test's or CI's temporary directory are often
// deeper than that.
const maxSocketPath = 107

// viaDir calls fn with a path to the socket at path that fits in a socket address: path
// itself when it is short enough, else /proc/self/fd/<N>/<name>, where N is a descriptor of
// the socket's directory (Linux resolves the link to the directory, so the socket is created
// and found where path says).
func viaDir(path string, fn func(addr string) error) error {
	if len(path) <= maxSocketPath {
		return fn(path)
	}
	dir, err := os.OpenFile(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer dir.Close()
	addr := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path))
	if len(addr) > maxSocketPath {
		return fmt.Errorf("socket name %q is too long", filepath.Base(path))
	}
	return fn(addr)
}

// listenUnix listens on a Unix socket at path, however long path is.
func listenUnix(path string) (net.Listener, error) {
	var l net.Listener
	err := viaDir(path, func(addr string) (err error) {
		l, err = net.Listen("unix", addr)
		return err
	})
	if ul, ok := l.(*net.UnixListener); ok {
		// The listener was bound through a name that dies with the directory descriptor:
		// removing the socket file on Close is the supervisor's business, by its real path.
		ul.SetUnlinkOnClose(false)
	}
	return l, err
}

// dialUnix connects to the Unix socket at path, however long path is.
func dialUnix(path string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := viaDir(path, func(addr string) (err error) {
		c, err = net.DialTimeout("unix", addr, timeout)
		return err
	})
	return c, err
}
