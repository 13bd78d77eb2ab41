package supervise

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
)

// A handoff passes a new supervisor its spec (the prompt and the whole environment, API keys
// included) without the disk ever holding it: the starter listens on a one-time Unix socket,
// the supervisor it started connects and reads the spec, and the starter learns the
// supervisor's pid from the connection itself. If either side dies half-way, an empty socket
// file is all that is left (and Offer's next call in the directory removes such leftovers).

// handoffLimit bounds a spec: a prompt (4 MB at most) and an environment.
const handoffLimit = 64 << 20

// Handoff is the starter's side of one handoff.
type Handoff struct {
	ln   net.Listener
	path string
	spec []byte
}

// OfferHandoff listens in dir for the supervisor that will take spec.
func OfferHandoff(dir string, spec []byte) (*Handoff, error) {
	if err := statedir.Mkdir(dir); err != nil {
		return nil, err
	}
	removeStaleHandoffs(dir)
	var rnd [8]byte
	rand.Read(rnd[:])
	path := filepath.Join(dir, hex.EncodeToString(rnd[:])+".sock")
	// Owner only (ListenUnix), in a directory of the user's own; the peer's uid is checked too.
	ln, err := statedir.ListenUnix(path)
	if err != nil {
		return nil, fmt.Errorf("handing over to the supervisor: %w", err)
	}
	return &Handoff{ln: ln, path: path, spec: spec}, nil
}

// Path is the socket the supervisor is told to take its spec from.
func (h *Handoff) Path() string { return h.path }

// Give waits for the supervisor to connect, up to ctx's end, hands it the spec and returns its
// pid. A connection from another user is refused.
func (h *Handoff) Give(ctx context.Context) (int, error) {
	go func() {
		<-ctx.Done()
		h.ln.Close()
	}()
	for {
		c, err := h.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return 0, errors.New("the supervisor did not start")
			}
			return 0, err
		}
		uc := c.(*net.UnixConn)
		pid, ok := peerPID(uc)
		if !ok {
			c.Close()
			continue
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Write(h.spec)
		if err == nil {
			err = uc.CloseWrite()
		}
		if err == nil {
			// The supervisor answers once it holds the spec: then it is sure to run it.
			var ack [1]byte
			_, err = io.ReadFull(c, ack[:])
		}
		c.Close()
		if err != nil {
			return 0, fmt.Errorf("handing over to the supervisor: %w", err)
		}
		return pid, nil
	}
}

// Close removes the socket.
func (h *Handoff) Close() { h.ln.Close() }

// TakeHandoff is the supervisor's side: it reads its spec from the starter at path.
func TakeHandoff(path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := statedir.DialUnix(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("taking the spec from %s: %w", path, err)
	}
	defer c.Close()
	// The spec is a command line the supervisor runs: only this user's starter may give it,
	// whatever sits at path (the directory is checked to be the user's, but a spec from another
	// user would run their argv as this one).
	if uc, ok := c.(*net.UnixConn); !ok || !sameUser(uc) {
		return nil, fmt.Errorf("taking the spec from %s: the socket's owner is not this user", path)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(io.LimitReader(c, handoffLimit+1))
	if err != nil {
		return nil, fmt.Errorf("taking the spec: %w", err)
	}
	if len(b) > handoffLimit {
		return nil, errors.New("taking the spec: over the size limit")
	}
	if _, err := c.Write([]byte{1}); err != nil {
		return nil, fmt.Errorf("taking the spec: %w", err)
	}
	return b, nil
}

// peerPID returns the pid of the process at the other end of c, if it runs as this user.
func peerPID(c *net.UnixConn) (int, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *syscall.Ucred
	raw.Control(func(fd uintptr) {
		cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if err != nil || cred == nil || int(cred.Uid) != os.Getuid() {
		return 0, false
	}
	return int(cred.Pid), true
}

// removeStaleHandoffs removes handoff sockets older than a minute (a handoff takes
// milliseconds, so their starter died); they hold no data, but they should not pile up. They
// are not probed: a probe would be taken for the supervisor by a live handoff.
func removeStaleHandoffs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type()&os.ModeSocket == 0 {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
			os.Remove(p)
		}
	}
}
