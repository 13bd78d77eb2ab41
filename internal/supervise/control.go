package supervise

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
)

// The control socket: each live supervisor listens on a Unix socket (0600, in a 0700
// directory, and it checks that a caller runs as the same user) and answers one JSON request
// per line with one JSON response per line. It is the same with or without tmux, and what
// swarm's send / peek / interrupt / eof / kill and ralph's prompt injection use.

// Control operations.
const (
	OpSend   = "send"   // type Text into the agent's terminal, literally (see agentProc.typeText)
	OpKeys   = "keys"   // press Keys (see Keys)
	OpScreen = "screen" // the last Lines lines of the screen
	OpStop   = "stop"   // stop the current attempt, recording Reason (default "killed")
	OpStatus = "status" // which attempt runs, and the agent's pid
)

// Keys are the named keys OpKeys presses, as the bytes a terminal sends for them.
var Keys = map[string]string{
	"interrupt": "\x03", // Ctrl-C: the line discipline turns it into SIGINT for the agent
	"eof":       "\x04", // Ctrl-D
	"escape":    "\x1b",
	"enter":     "\r",
	"tab":       "\t",
	"backspace": "\x7f",
	"up":        "\x1b[A",
	"down":      "\x1b[B",
	"right":     "\x1b[C",
	"left":      "\x1b[D",
}

// Request is one control request.
type Request struct {
	Op     string   `json:"op"`
	Text   string   `json:"text,omitempty"`
	Keys   []string `json:"keys,omitempty"`
	Lines  int      `json:"lines,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// Response is the answer to one request.
type Response struct {
	OK       bool     `json:"ok"`
	Error    string   `json:"error,omitempty"`
	Screen   []string `json:"screen,omitempty"`
	Name     string   `json:"name,omitempty"`
	Attempt  int      `json:"attempt,omitempty"`
	AgentPID int      `json:"agent_pid,omitempty"`
	Running  bool     `json:"running"`
	// WaitingInput is since when the running agent waits for input (waiting.go); zero when
	// it does not.
	WaitingInput time.Time `json:"waiting_input,omitzero"`
}

// requestLimit bounds one request line: text typed into an agent is a prompt, not a file.
const requestLimit = 4 << 20

// serveControl answers requests on l until it is closed.
func (s *Supervisor) serveControl(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go s.serveConn(c)
	}
}

func (s *Supervisor) serveConn(c net.Conn) {
	defer c.Close()
	if uc, ok := c.(*net.UnixConn); !ok || !sameUser(uc) {
		json.NewEncoder(c).Encode(Response{Error: "permission denied: not the supervisor's user"})
		return
	}
	r := bufio.NewScanner(c)
	r.Buffer(make([]byte, 64<<10), requestLimit)
	enc := json.NewEncoder(c)
	for r.Scan() {
		var req Request
		if err := json.Unmarshal(r.Bytes(), &req); err != nil {
			enc.Encode(Response{Error: "bad request: " + err.Error()})
			continue
		}
		if err := enc.Encode(s.handle(&req)); err != nil {
			return
		}
	}
}

// handle carries out one request against the current attempt.
func (s *Supervisor) handle(req *Request) Response {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	resp := Response{OK: true}
	if cur != nil {
		resp.Name, resp.Attempt, resp.AgentPID, resp.Running = cur.a.Name, cur.a.Number, cur.proc.pid(), true
		if since := cur.waitingSince.Load(); since != 0 {
			resp.WaitingInput = time.Unix(0, since)
		}
	}
	fail := func(err error) Response {
		resp.OK, resp.Error = false, err.Error()
		return resp
	}
	if cur == nil && req.Op != OpStatus {
		return fail(errors.New("no agent is running"))
	}
	switch req.Op {
	case OpStatus:
	case OpSend:
		if err := cur.proc.typeText(req.Text); err != nil {
			return fail(err)
		}
	case OpKeys:
		var b []byte
		for _, k := range req.Keys {
			seq, ok := Keys[k]
			if !ok {
				return fail(fmt.Errorf("unknown key %q", k))
			}
			b = append(b, seq...)
		}
		if err := cur.proc.write(b); err != nil {
			return fail(err)
		}
	case OpScreen:
		n := req.Lines
		if n <= 0 {
			n = 1 << 20
		}
		resp.Screen = cur.screen.Lines(n)
	case OpStop:
		reason := req.Reason
		if reason == "" {
			reason = ReasonKilled
		}
		select {
		case cur.stopReq <- reason:
		default: // a stop is already on its way
		}
	default:
		return fail(fmt.Errorf("unknown operation %q", req.Op))
	}
	return resp
}

// sameUser reports whether the peer of c runs as this process's user.
func sameUser(c *net.UnixConn) bool {
	_, ok := peerPID(c)
	return ok
}

// listenControl opens the name's control socket, owner only, in a private directory. A socket
// left by a supervisor that died is replaced; anything else at its path is not. One a live
// supervisor listens on is waited for (at most controlTakeover): the name's last supervisor,
// its attempt recorded, is still closing while the next one starts.
func (s *Supervisor) listenControl(ctx context.Context) (net.Listener, error) {
	path := s.Layout.SocketPath(s.Name)
	if err := statedir.MkdirFor(path); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(controlTakeover)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		// ListenUnix makes it 0600 without following a link swapped in at path (os.Chmod would).
		ln, err := statedir.ListenUnix(path)
		if err == nil {
			return ln, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
	}
}

// controlTakeover bounds the wait for the last supervisor of a name to let go of its socket.
const controlTakeover = 10 * time.Second

// Control is a client of a supervisor's control socket.
type Control struct {
	conn net.Conn
	r    *bufio.Scanner
}

// DialControl connects to the control socket at path.
func DialControl(path string, timeout time.Duration) (*Control, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := statedir.DialUnix(ctx, path)
	if err != nil {
		return nil, err
	}
	r := bufio.NewScanner(c)
	r.Buffer(make([]byte, 64<<10), requestLimit)
	return &Control{conn: c, r: r}, nil
}

// Do sends one request and returns the answer; a refusal is returned as an error.
func (c *Control) Do(req Request) (*Response, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	if !c.r.Scan() {
		if err := c.r.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("the supervisor closed the control socket")
	}
	var resp Response
	if err := json.Unmarshal(c.r.Bytes(), &resp); err != nil {
		return nil, err
	}
	if !resp.OK {
		return &resp, errors.New(resp.Error)
	}
	return &resp, nil
}

// Close ends the connection.
func (c *Control) Close() error { return c.conn.Close() }
