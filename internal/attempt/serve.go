package attempt

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/supervise"
	"golang.org/x/sys/unix"
)

// A serving supervisor runs one slot's attempts one after another, so that an attempt does
// not pay for a new process (a third of a do-nothing task's CPU went to starting, faulting in
// and ending one). Its runner starts it (StartServer) with one end of a socket pair as
// descriptor 3 (supervise.ServeHandoff): the runner holds the other end, so no socket file is
// made, and the peer can only be the process it started. For each attempt the runner
// registers the launch (Opened.Register: the entry with pid 0, the running records), lets go
// of the bead's lock and writes the spec; the supervisor claims it under the lock (the entry
// must still be that launch's), starts the agent, writes its entry (pid, start time, agent)
// and lets go, then answers "claimed". Once the attempt is recorded and its entry removed it
// answers "done". The prompt and the environment never touch the disk.
//
// A crash of the supervisor loses only the attempt it ran: its entry stays, no process holds
// it, and the runner's judgement (Judge) closes it as supervisor-lost; the slot's next attempt
// gets a new supervisor. A runner that dies leaves the attempt running to its recorded end (a
// new run adopts it by the registry, as any other); the supervisor exits once it has no
// attempt and no runner: when the connection ends, or on a signal while idle.

// serveLimit bounds a spec on the connection: a prompt (4 MB at most) and an environment.
const serveLimit = 64 << 20

// Replies of a serving supervisor, one line each.
const (
	replyClaimed = "claimed"
	replyRefused = "refused"
	replyDone    = "done"
)

// SlotName is the operand of a supervisor serving slot: no bead has a ':' in its name, so it
// is never taken for one's supervisor by its command line.
func SlotName(slot string) string { return slotPrefix + slot }

const slotPrefix = "slot:"

// Server is the runner's side of a supervisor serving a slot.
type Server struct {
	// Pid is the supervisor's.
	Pid   int
	child *proc.Child
	conn  *net.UnixConn
	r     *bufio.Reader
}

// StartServer starts self (the supervisor verb's command line, as for Launch) as a supervisor
// serving the slot named name, detached in its own session, in dir.
func StartServer(self []string, dir, name string) (*Server, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("starting the supervisor: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "runner"), os.NewFile(uintptr(fds[1]), "supervisor")
	defer theirs.Close()
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, fmt.Errorf("starting the supervisor: %w", err)
	}
	argv := append(append([]string{}, self...), "--handoff", supervise.ServeHandoff, SlotName(name))
	child, err := proc.StartDetached(argv, proc.Detached{Dir: dir, Files: []*os.File{theirs}})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("starting the supervisor: %w", err)
	}
	return &Server{Pid: child.Pid, child: child, conn: c.(*net.UnixConn), r: bufio.NewReaderSize(c, 4096)}, nil
}

// Gone is closed once the supervisor has ended.
func (s *Server) Gone() <-chan struct{} { return s.child.Done() }

// Hand gives the supervisor attempt spec, launched by Register (its bead's lock let go), and
// waits until it has claimed it: its agent has started, or failed to, and the entry names the
// supervisor. An error says it did not claim it: it refused (ErrNotClaimed's reason), or it is
// gone; the Server is then of no more use.
func (s *Server) Hand(ctx context.Context, spec *Spec) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	stop := context.AfterFunc(ctx, func() { s.conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := s.conn.Write(append(n[:], b...)); err != nil {
		return fmt.Errorf("handing the attempt to its supervisor: %w", err)
	}
	line, err := s.reply()
	switch {
	case err != nil:
		return fmt.Errorf("handing the attempt to its supervisor: %w", err)
	case line == replyClaimed:
		return nil
	}
	return fmt.Errorf("the supervisor %s", line)
}

// Wait waits until the supervisor reports the attempt recorded, or ctx ends (ctx's error; the
// attempt runs on, and Wait may be called again). Any other error says the supervisor is gone
// (or broke the protocol): its attempt is the registry's to judge.
func (s *Server) Wait(ctx context.Context) error {
	s.conn.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { s.conn.SetDeadline(time.Now()) })
	defer stop()
	line, err := s.reply()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if line != replyDone {
		return fmt.Errorf("the supervisor said %q, not done", line)
	}
	return nil
}

// reply reads one line of the supervisor's, bounded by the reader's buffer.
func (s *Server) reply() (string, error) {
	line, err := s.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			return "", errors.New("the supervisor is gone")
		}
		return "", err
	}
	return strings.TrimSuffix(string(line), "\n"), nil
}

// Close lets the supervisor go: it exits once its attempt, if any, is recorded.
func (s *Server) Close() { s.conn.Close() }

// Kill ends a supervisor whose protocol broke (it answered what it should not have): it and
// its agent, if any, are killed and reaped; the attempt is the registry's to judge.
func (s *Server) Kill() {
	s.conn.Close()
	s.child.Kill()
}

// serve is Supervise for a supervisor serving a slot over conn: it runs the attempts conn
// hands it, one at a time, until conn ends or a signal stops it.
func serve(ctx context.Context, stateDir, slot string, conn io.ReadWriteCloser, sigs chan os.Signal, console io.Writer, input *os.File) error {
	defer conn.Close()
	if !strings.HasPrefix(slot, slotPrefix) || strings.ContainsAny(slot, "/\x00") || len(slot) > 128 {
		return fmt.Errorf("%q is no slot's name", slot)
	}
	d := NewDir(stateDir)
	reserve, err := supervise.OpenReserve(d.Layout.ReservePath(slot))
	if err == nil {
		defer reserve.Close()
	} else {
		reserve = nil // each attempt holds its own (Supervisor.Run)
	}
	specs := make(chan *Spec)
	bad := make(chan error, 1)
	go func() {
		defer close(specs)
		for {
			spec, err := readSpec(conn)
			if err != nil {
				if !errors.Is(err, io.EOF) {
					bad <- err
				}
				return
			}
			specs <- spec
		}
	}()
	for {
		var spec *Spec
		select {
		case s, ok := <-specs:
			if !ok {
				select {
				case err := <-bad:
					return fmt.Errorf("%s: %w", slot, err)
				default:
					return nil // the runner is gone and no attempt is left
				}
			}
			spec = s
		case sig := <-sigs:
			if sig == syscall.SIGWINCH {
				continue
			}
			return nil // stopped while idle: nothing to record
		}
		if stopping := runServed(ctx, d, spec, reserve, conn, sigs, console, input); stopping {
			return nil
		}
	}
}

// runServed claims, runs and records one attempt handed to a serving supervisor, and tells the
// runner. It reports whether a signal stopped the supervisor as a whole.
func runServed(ctx context.Context, d Dir, spec *Spec, reserve *supervise.Reserve, conn io.Writer, sigs chan os.Signal, console io.Writer, input *os.File) bool {
	bead := spec.Run.Bead
	if spec.Attempt.Name != bead || !validBead(bead) || spec.Run.Attempt <= 0 {
		fmt.Fprintf(conn, "%s: a spec for %q\n", replyRefused, bead)
		return false
	}
	s := &supervise.Supervisor{Layout: d.Layout, Tool: Tool, Name: bead, Backend: spec.Backend,
		Socket: spec.Socket, Session: spec.Session, Console: console, Input: input, Once: true, Signals: sigs,
		Claims: spec.Run.Attempt, Reserve: reserve}
	if err := s.Open(ctx); err != nil {
		fmt.Fprintf(conn, "%s: %s\n", replyRefused, strings.Join(strings.Fields(err.Error()), " "))
		return false
	}
	claimed := false
	s.Registered = func() {
		claimed = true
		fmt.Fprintln(conn, replyClaimed)
	}
	s.Run(ctx, &spec.Attempt, &Recorder{Dir: d, Spec: spec})
	s.Close()
	if !claimed {
		fmt.Fprintln(conn, replyClaimed) // it ended before its agent started: recorded all the same
	}
	fmt.Fprintln(conn, replyDone)
	return s.Stopping() != ""
}

// readSpec reads one spec framed by its length.
func readSpec(r io.Reader) (*Spec, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > serveLimit {
		return nil, errors.New("a spec over the size limit")
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("reading a spec: %w", err)
	}
	var spec Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, fmt.Errorf("the supervisor's spec: %w", err)
	}
	return &spec, nil
}
