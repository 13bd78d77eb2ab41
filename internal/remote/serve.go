package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// ServeVerb is the hidden dispatch verb that serves one client for as long as its ssh session
// lasts: `dispatch __serve --state-dir DIR`. It is how a runner keeps one process of ours per
// host instead of starting one for each command (as `git upload-pack` and `rsync --server`
// serve a client on their stdin and stdout). docs/remote.md describes the protocol.
const ServeVerb = "__serve"

// ServeProtocol is the protocol's version, in the server's hello. A client that gets another
// (or no hello: a dispatch older than the verb) runs its commands one ssh session each.
const ServeProtocol = 1

// Bounds on a line of the protocol: a request holds a prompt, a response a command's output
// (DefaultMaxOutput per stream, base64) or a snapshot (two records of at most a few MB).
const (
	maxRequestLine  = 32 << 20
	maxResponseLine = 3 * DefaultMaxOutput
)

// serveHello is the server's first line.
type serveHello struct {
	Serve int `json:"serve"`
}

// serveRequest is one line from the client. Op "records": Bead's snapshot; "run": Argv run
// with Env added to the server's environment, Stdin on its stdin (bytes as they are: base64;
// none is an empty stdin), for at most TimeoutMS;
// "watch": Bead's snapshot once attempt Number's result is final there, or after WaitMS,
// the records read every PollMS;
// "cancel": the run of request Of ended (its client stopped waiting).
type serveRequest struct {
	ID        uint64   `json:"id"`
	Op        string   `json:"op"`
	Bead      string   `json:"bead,omitempty"`
	Argv      []string `json:"argv,omitempty"`
	Env       []string `json:"env,omitempty"`
	Stdin     []byte   `json:"stdin,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	Of        uint64   `json:"of,omitempty"`
	Number    int      `json:"number,omitempty"`
	WaitMS    int64    `json:"wait_ms,omitempty"`
	PollMS    int64    `json:"poll_ms,omitempty"`
}

// serveResponse is one line from the server, the answer to request ID: an Error, or a
// Snapshot, or a run's exit Code and output (TooLarge: it printed more than the bound and was
// killed).
type serveResponse struct {
	ID       uint64    `json:"id"`
	Error    string    `json:"error,omitempty"`
	Snapshot *Snapshot `json:"snapshot,omitempty"`
	Code     int       `json:"code"`
	Stdout   []byte    `json:"stdout,omitempty"`
	Stderr   []byte    `json:"stderr,omitempty"`
	TooLarge bool      `json:"too_large,omitempty"`
}

// Records is how the server reads a bead's snapshot on its host (cmd/dispatch's, the records
// verb's own code).
type Records func(ctx context.Context, bead string) (*Snapshot, error)

// Serve answers the requests on in with responses on out until in ends (the client's session
// closed), then stops the commands still running and returns. Requests are answered as they
// end, each in a goroutine of its own: the slots of a host share one server. The server trusts
// its client as far as ssh does (whoever can write to it could run any command over ssh as
// the same user): what it bounds is what it reads and keeps.
func Serve(ctx context.Context, in io.Reader, out io.Writer, records Records) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &server{out: out, records: records, running: map[uint64]context.CancelFunc{}}
	if err := srv.write(serveHello{Serve: ServeProtocol}); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxRequestLine)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for sc.Scan() {
		var req serveRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("%s: a request that is not JSON: %w", ServeVerb, err)
		}
		if req.Op == "cancel" {
			srv.cancel(req.Of)
			continue
		}
		// A command given a stdin (the host's dispatch launching an attempt, its prompt on
		// stdin) is not ended with the session, as over an ssh session of its own: it
		// returns once the agent is handed to its supervisor. Others are, as watchScript
		// ends them.
		base := ctx
		if len(req.Stdin) > 0 {
			base = context.WithoutCancel(ctx)
		}
		rctx := srv.start(base, req.ID)
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := srv.answer(rctx, req)
			srv.done(req.ID)
			resp.ID = req.ID
			srv.write(resp)
		}()
	}
	return sc.Err()
}

type server struct {
	wmu     sync.Mutex
	out     io.Writer
	records Records

	mu      sync.Mutex
	running map[uint64]context.CancelFunc
}

func (s *server) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.out.Write(append(b, '\n'))
	return err
}

func (s *server) start(ctx context.Context, id uint64) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.running[id] = cancel
	s.mu.Unlock()
	return ctx
}

func (s *server) done(id uint64) { s.cancel(id) }

func (s *server) cancel(id uint64) {
	s.mu.Lock()
	cancel := s.running[id]
	delete(s.running, id)
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (s *server) answer(ctx context.Context, req serveRequest) serveResponse {
	switch req.Op {
	case "records":
		snap, err := s.records(ctx, req.Bead)
		if err != nil {
			return serveResponse{Error: err.Error()}
		}
		return serveResponse{Snapshot: snap}
	case "watch":
		return s.watch(ctx, req)
	case "run":
		return runServed(ctx, req)
	}
	return serveResponse{Error: fmt.Sprintf("unknown op %q", req.Op)}
}

// runServed runs a request's command: its output bounded as a command's over ssh is, its end
// with the request's timeout or its cancel (SIGTERM, as watchScript ends one whose client
// went).
func runServed(ctx context.Context, req serveRequest) serveResponse {
	if len(req.Argv) == 0 {
		return serveResponse{Error: "run: no command"}
	}
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	runCtx, kill := context.WithCancel(ctx)
	defer kill()
	cmd := exec.CommandContext(runCtx, req.Argv[0], req.Argv[1:]...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), req.Env...)
	cmd.Stdin = bytes.NewReader(req.Stdin)
	var stdout, stderr bytes.Buffer
	bo, be := newBoundedWriter(&stdout, DefaultMaxOutput, kill), newBoundedWriter(&stderr, DefaultMaxOutput, kill)
	cmd.Stdout, cmd.Stderr = bo, be
	err := cmd.Run()
	resp := serveResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), TooLarge: bo.passedBound() || be.passedBound()}
	var ee *exec.ExitError
	switch {
	case resp.TooLarge:
	case ctx.Err() != nil:
		resp.Error = ctx.Err().Error()
	case errors.As(err, &ee):
		resp.Code = ee.ExitCode()
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		// As a shell says of a command it cannot find.
		resp.Code, resp.Stderr = 127, fmt.Appendf(resp.Stderr, "%s: %v\n", req.Argv[0], err)
	case errors.Is(err, os.ErrPermission):
		resp.Code, resp.Stderr = 126, fmt.Appendf(resp.Stderr, "%s: %v\n", req.Argv[0], err)
	case err != nil:
		resp.Error = err.Error()
	}
	return resp
}

// watch answers with the bead's snapshot once attempt Number's result is final, or when WaitMS
// has passed, reading the records every PollMS: one answer a heartbeat, and an attempt's end
// seen within PollMS of it.
func (s *server) watch(ctx context.Context, req serveRequest) serveResponse {
	deadline := time.Now().Add(time.Duration(req.WaitMS) * time.Millisecond)
	poll := max(time.Duration(req.PollMS)*time.Millisecond, minPoll)
	for {
		snap, err := s.records(ctx, req.Bead)
		if err != nil {
			return serveResponse{Error: err.Error()}
		}
		left := time.Until(deadline)
		if _, ok := snap.Final(req.Number); ok || left <= 0 {
			return serveResponse{Snapshot: snap}
		}
		select {
		case <-ctx.Done():
			return serveResponse{Snapshot: snap}
		case <-time.After(min(poll, left)):
		}
	}
}

// minPoll bounds how often a watch reads the records, whatever its client asks.
const minPoll = 10 * time.Millisecond
