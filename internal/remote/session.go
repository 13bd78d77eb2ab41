package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// Serve makes the Conn run its commands and read its snapshots through one long-lived server
// of the host's dispatch (ServeVerb) over one ssh session, started at the first command and
// started again when it died. A host whose dispatch has no such verb (older) keeps the
// per-command path: one ssh session each.
func (c *Conn) Serve() {
	c.smu.Lock()
	c.serveOn = true
	c.smu.Unlock()
}

// Served says whether the host's server answers: started, and not found missing.
func (c *Conn) Served() bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	return c.sess != nil && !c.sess.dead()
}

// helloTimeout bounds a server's start: its session opened through the master and its hello.
const helloTimeout = 15 * time.Second

// errNotSent is a request that never reached the server (its session had died): the caller
// runs it the per-command way.
var errNotSent = errors.New("not sent to the host's server")

// server is the host's server when the Conn serves, started if none runs; nil when the Conn
// does not serve, the host's dispatch lacks the verb, or it could not be started now (the
// per-command path then runs the command, and says why the host did not answer).
func (c *Conn) server(ctx context.Context) *session {
	c.smu.Lock()
	defer c.smu.Unlock()
	if !c.serveOn || c.noServer {
		return nil
	}
	if c.sess != nil && !c.sess.dead() {
		return c.sess
	}
	s, err := c.startSession(ctx)
	if errors.Is(err, errNoServer) {
		c.noServer = true
		return nil
	}
	if err != nil {
		return nil
	}
	c.sess = s
	return s
}

// errNoServer is a host whose dispatch answered without a hello of our protocol: older than the
// verb.
var errNoServer = errors.New("the host's dispatch has no server")

// session is one server's ssh session: requests are written as lines on its stdin, and a
// reader matches each response to its request by id.
type session struct {
	c   *Conn
	cmd *exec.Cmd
	in  io.WriteCloser

	wmu sync.Mutex

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan serveResponse
	ended   chan struct{}
}

// startSession starts the host's server through the master and reads its hello.
func (c *Conn) startSession(ctx context.Context) (*session, error) {
	argv := append(append([]string{"env"}, c.Env()...), c.Program("dispatch"), ServeVerb, "--state-dir", c.Host.StateDir)
	args := append(c.ClientOptions(), "-T", "--", c.Host.SSH, Quote(argv...))
	// Not bound to ctx: the session outlives the command that started it; closed with the
	// master (Close) or when it dies.
	cmd := exec.Command(c.opts.ssh(), args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &session{c: c, cmd: cmd, in: in, pending: map[uint64]chan serveResponse{}, ended: make(chan struct{})}
	r := bufio.NewReaderSize(out, 64<<10)
	hello := make(chan error, 1)
	go func() {
		line, err := readLine(r, 4096)
		var h serveHello
		switch {
		case err != nil:
			hello <- err
		case json.Unmarshal(line, &h) != nil || h.Serve != ServeProtocol:
			hello <- errNoServer
		default:
			hello <- nil
		}
	}()
	var herr error
	t := time.NewTimer(helloTimeout)
	defer t.Stop()
	select {
	case herr = <-hello:
	case <-ctx.Done():
		herr = ctx.Err()
	case <-t.C:
		herr = errors.New("no hello from the host's server")
	}
	if herr != nil {
		in.Close()
		cmd.Process.Kill()
		werr := cmd.Wait()
		var ee *exec.ExitError
		// An answer that is not ours, or an exit of the host's dispatch (a usage error: an
		// older dispatch) with ssh up: the host has no server. ssh's own 255 is the
		// connection's, tried again at the next command.
		if errors.Is(herr, errNoServer) || (errors.Is(herr, io.EOF) && errors.As(werr, &ee) && ee.ExitCode() != 255 && ee.ExitCode() != -1) {
			return nil, errNoServer
		}
		return nil, herr
	}
	go s.read(r)
	return s, nil
}

// readLine reads one line of at most bound bytes: a longer one is an error (a hostile host's
// line without end costs a bounded buffer).
func readLine(r *bufio.Reader, bound int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > bound {
			return nil, fmt.Errorf("%w: a line of the host's server over %d bytes", ErrOutputTooLarge, bound)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// read hands each response to its request until the session ends (or says something that is
// not the protocol: it is then ended, and started again at the next command).
func (s *session) read(r *bufio.Reader) {
	defer s.end()
	for {
		line, err := readLine(r, maxResponseLine)
		if err != nil {
			return
		}
		var resp serveResponse
		if json.Unmarshal(line, &resp) != nil {
			return
		}
		s.mu.Lock()
		ch := s.pending[resp.ID]
		delete(s.pending, resp.ID)
		s.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
}

// end closes the session: its ssh ended (the host's server stops when its stdin closes) and its
// waiting requests told.
func (s *session) end() {
	s.mu.Lock()
	select {
	case <-s.ended:
		s.mu.Unlock()
		return
	default:
	}
	close(s.ended)
	s.mu.Unlock()
	s.in.Close()
	s.cmd.Process.Kill()
	go s.cmd.Wait()
}

func (s *session) dead() bool {
	select {
	case <-s.ended:
		return true
	default:
		return false
	}
}

// call sends req and waits for its response. A session that ended before the request was
// written is errNotSent; one that ended after is the host's connection lost (ErrNoMaster when
// the master went with it, else ErrUnreachable): whether the request was carried out is for
// the caller to find out, as for a command whose ssh failed.
func (s *session) call(ctx context.Context, req serveRequest) (serveResponse, error) {
	ch := make(chan serveResponse, 1)
	s.mu.Lock()
	if s.dead() {
		s.mu.Unlock()
		return serveResponse{}, errNotSent
	}
	s.next++
	req.ID = s.next
	s.pending[req.ID] = ch
	s.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		return serveResponse{}, err
	}
	s.wmu.Lock()
	_, err = s.in.Write(append(b, '\n'))
	s.wmu.Unlock()
	if err != nil {
		s.end()
		return serveResponse{}, errNotSent
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		s.forget(req.ID)
		s.wmu.Lock()
		b, _ := json.Marshal(serveRequest{Op: "cancel", Of: req.ID})
		s.in.Write(append(b, '\n'))
		s.wmu.Unlock()
		return serveResponse{}, ctx.Err()
	case <-s.ended:
		s.forget(req.ID)
		if s.c.master() != nil {
			return serveResponse{}, fmt.Errorf("%w: %s", ErrNoMaster, s.c.Host.Name)
		}
		return serveResponse{}, fmt.Errorf("%w: host %s: its server's session ended", ErrUnreachable, s.c.Host.Name)
	}
}

func (s *session) forget(id uint64) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

// run is Conn.Run through the server.
func (s *session) run(ctx context.Context, rc Cmd) (*Result, error) {
	if rc.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, rc.Timeout)
		defer cancel()
	}
	req := serveRequest{Op: "run", Argv: rc.Argv, Env: rc.Env}
	if rc.Stdin != nil {
		b, err := io.ReadAll(io.LimitReader(rc.Stdin, maxRequestLine/2+1))
		if err != nil {
			return nil, err
		}
		if len(b) > maxRequestLine/2 {
			return nil, fmt.Errorf("host %s: a command's input over %d bytes", s.c.Host.Name, maxRequestLine/2)
		}
		req.Stdin = b
	}
	if d, ok := ctx.Deadline(); ok {
		req.TimeoutMS = max(1, time.Until(d).Milliseconds())
	}
	resp, err := s.call(ctx, req)
	switch {
	case errors.Is(err, errNotSent):
		return nil, err
	case err != nil && ctx.Err() != nil:
		return &Result{}, fmt.Errorf("host %s: %s: %w", s.c.Host.Name, Quote(rc.Argv...), ctx.Err())
	case err != nil:
		return &Result{}, err
	}
	res := &Result{Code: resp.Code, Stdout: resp.Stdout, Stderr: resp.Stderr}
	if rc.Stdout != nil {
		rc.Stdout.Write(resp.Stdout)
		res.Stdout = nil
	}
	if rc.Stderr != nil {
		rc.Stderr.Write(resp.Stderr)
	}
	switch {
	case resp.TooLarge:
		return res, fmt.Errorf("host %s: %s: %w, and was stopped", s.c.Host.Name, Quote(rc.Argv...), ErrOutputTooLarge)
	case resp.Error != "":
		return res, fmt.Errorf("host %s: %s: %s", s.c.Host.Name, Quote(rc.Argv...), Printable(resp.Error))
	case resp.Code == 255:
		// Over ssh, 255 is ssh's own failure, and callers take it so (a start whose
		// connection was lost): the same exit through the server means the same.
		return res, fmt.Errorf("%w: host %s: %s", ErrUnreachable, s.c.Host.Name, lastLine(resp.Stderr))
	}
	return res, nil
}

// records is Conn.Snapshot through the server.
func (s *session) records(ctx context.Context, bead string) (*Snapshot, error) {
	return s.snapshot(ctx, serveRequest{Op: "records", Bead: bead})
}

// watch is a records read through the server that waits there for attempt number's end, at
// most wait, reading them every poll.
func (s *session) watch(ctx context.Context, bead string, number int, wait, poll time.Duration) (*Snapshot, error) {
	return s.snapshot(ctx, serveRequest{Op: "watch", Bead: bead, Number: number, WaitMS: max(1, wait.Milliseconds()), PollMS: poll.Milliseconds()})
}

// snapshot sends req, a request answered by a bead's snapshot (records, watch), and reads it.
func (s *session) snapshot(ctx context.Context, req serveRequest) (*Snapshot, error) {
	resp, err := s.call(ctx, req)
	switch {
	case err != nil:
		return nil, err
	case resp.Error != "":
		return nil, fmt.Errorf("host %s: reading the records of %s: %s", s.c.Host.Name, req.Bead, Printable(resp.Error))
	case resp.Snapshot == nil:
		return nil, fmt.Errorf("host %s: reading the records of %s: no snapshot", s.c.Host.Name, req.Bead)
	}
	return resp.Snapshot, nil
}

// closeSession ends the server's session, if any (the Conn closes).
func (c *Conn) closeSession() {
	c.smu.Lock()
	s := c.sess
	c.sess = nil
	c.smu.Unlock()
	if s != nil {
		s.end()
	}
}
