package statedir

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deepDir makes a directory whose path is at least n bytes long.
func deepDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for len(dir) < n {
		dir = filepath.Join(dir, strings.Repeat("d", 50))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// echo answers one line on each connection with the same line.
func echo(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Write([]byte(line))
		}()
	}
}

func roundTrip(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := DialUnix(ctx, path)
	if err != nil {
		t.Fatalf("DialUnix(%d-byte path) = %v", len(path), err)
	}
	defer c.Close()
	c.Write([]byte("ping\n"))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo over the socket = %q, %v", line, err)
	}
}

func TestUnixSocketInA200ByteDirectory(t *testing.T) {
	dir := deepDir(t, 200)
	path := Dir{Root: dir}.Socket("bd-1")
	if err := MkdirFor(path); err != nil {
		t.Fatal(err)
	}
	if len(path) <= MaxSocketPath {
		t.Fatalf("path is %d bytes; the test needs one over %d", len(path), MaxSocketPath)
	}
	// The plain calls fail: this is what the helper is for.
	if _, err := net.Listen("unix", path); err == nil {
		t.Fatalf("net.Listen accepted a %d-byte socket path; the kernel limit is gone?", len(path))
	}
	l, err := ListenUnix(path)
	if err != nil {
		t.Fatalf("ListenUnix(%d-byte path) = %v", len(path), err)
	}
	go echo(l)
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("no socket at the real path: %v, %v", fi, err)
	}
	roundTrip(t, path)
	roundTrip(t, path) // the directory's descriptor of the first call is not needed after it
	if err := l.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the socket file is still there after Close (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := DialUnix(ctx, path); err == nil {
		t.Error("DialUnix after Close connected")
	}
}

func TestListenUnixShortPathAndStaleSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.sock")
	l, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	go echo(l)
	roundTrip(t, path)
	// A second listener on a live socket is refused: it belongs to someone.
	if l2, err := ListenUnix(path); err == nil {
		l2.Close()
		t.Fatal("ListenUnix on a live socket succeeded")
	}
	// A socket left by a listener that died (no unlink) is replaced.
	l.UnixListener.SetUnlinkOnClose(false)
	l.UnixListener.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the stale socket is gone already: %v", err)
	}
	l3, err := ListenUnix(path)
	if err != nil {
		t.Fatalf("ListenUnix over a stale socket = %v", err)
	}
	go echo(l3)
	roundTrip(t, path)
	l3.Close()
	// Anything else at the path is never removed.
	os.WriteFile(path, []byte("mine"), 0o600)
	if _, err := ListenUnix(path); err == nil {
		t.Error("ListenUnix over a regular file succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Error("ListenUnix removed a regular file")
	}
}

func TestSocketNameTooLongEvenViaTheDirectory(t *testing.T) {
	dir := deepDir(t, 120)
	path := filepath.Join(dir, strings.Repeat("n", 100)+".sock")
	if _, err := ListenUnix(path); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("ListenUnix(100-byte socket name) = %v, want an error saying it is too long", err)
	}
}

// A listener's Close removes only its own socket file: the next listener of the same path (the
// next supervisor of a name, started while the last one closes) keeps its file, and
// RemoveStaleSocket leaves a live socket alone.
func TestCloseKeepsTheNextListenersSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.sock")
	old, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	RemoveStaleSocket(path)
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("RemoveStaleSocket removed a live socket: %v", err)
	}
	// The old listener's file is taken away while it still listens (as an entry's removal
	// did), and the next listener binds the path.
	os.Remove(path)
	next, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	go echo(next)
	if err := old.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := old.Close(); err != nil {
		t.Fatalf("a second Close = %v", err)
	}
	roundTrip(t, path)

	// Its own file Close removes; a stale one RemoveStaleSocket removes, and anything that is
	// not a socket.
	next.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("Close left its socket: %v", err)
	}
	stale, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	stale.UnixListener.Close() // dies without removing its file
	RemoveStaleSocket(path)
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("RemoveStaleSocket left a stale socket: %v", err)
	}
	os.WriteFile(path, []byte("x"), 0o600)
	RemoveStaleSocket(path)
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("RemoveStaleSocket left a regular file: %v", err)
	}
}
