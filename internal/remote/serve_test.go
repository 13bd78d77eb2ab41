package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serveClient is a client of Serve over pipes: requests written, responses read by id.
type serveClient struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Reader
	end chan error
}

func newServeClient(t *testing.T, records Records) *serveClient {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &serveClient{t: t, in: inW, out: bufio.NewReader(outR), end: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), inR, outW, records)
		outW.Close()
		c.end <- err
	}()
	t.Cleanup(func() { inW.Close() })
	line, err := readLine(c.out, 4096)
	var h serveHello
	if err != nil || json.Unmarshal(line, &h) != nil || h.Serve != ServeProtocol {
		t.Fatalf("hello %q, %v", line, err)
	}
	return c
}

func (c *serveClient) send(req serveRequest) {
	b, _ := json.Marshal(req)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

func (c *serveClient) recv() serveResponse {
	line, err := readLine(c.out, maxResponseLine)
	if err != nil {
		c.t.Fatal(err)
	}
	var r serveResponse
	if err := json.Unmarshal(line, &r); err != nil {
		c.t.Fatal(err)
	}
	return r
}

// TestServeProtocol: the server says hello, answers a snapshot and a command's run (its
// stdin, environment, exit status and output), ends a run it is told to cancel (its answer
// comes, as the others', by its id), answers a watch of an attempt that does not end after
// its wait, and stops when its stdin ends.
func TestServeProtocol(t *testing.T) {
	var reads atomic.Int32
	c := newServeClient(t, func(_ context.Context, bead string) (*Snapshot, error) {
		reads.Add(1)
		if bead == "bad" {
			return nil, errors.New("no such bead")
		}
		return &Snapshot{Bead: bead, Live: true}, nil
	})
	c.send(serveRequest{ID: 1, Op: "records", Bead: "b1"})
	if r := c.recv(); r.ID != 1 || r.Snapshot == nil || r.Snapshot.Bead != "b1" || !r.Snapshot.Live {
		t.Errorf("records: %+v", r)
	}
	c.send(serveRequest{ID: 2, Op: "records", Bead: "bad"})
	if r := c.recv(); r.ID != 2 || r.Error != "no such bead" {
		t.Errorf("records of a bad bead: %+v", r)
	}
	c.send(serveRequest{ID: 3, Op: "run", Argv: []string{"sh", "-c", `cat; echo "$X" >&2; exit 4`}, Env: []string{"X=it's $(x)"}, Stdin: []byte("prompt\x00\xff")})
	if r := c.recv(); r.ID != 3 || r.Code != 4 || string(r.Stdout) != "prompt\x00\xff" || string(r.Stderr) != "it's $(x)\n" {
		t.Errorf("run: %+v", r)
	}
	c.send(serveRequest{ID: 4, Op: "run", Argv: []string{"/nonexistent/program"}})
	if r := c.recv(); r.ID != 4 || r.Code != 127 {
		t.Errorf("run of a missing program: %+v", r)
	}
	// A hung command, cancelled; a quick one answered meanwhile.
	c.send(serveRequest{ID: 5, Op: "run", Argv: []string{"sleep", "600"}})
	c.send(serveRequest{ID: 6, Op: "run", Argv: []string{"true"}})
	if r := c.recv(); r.ID != 6 || r.Code != 0 {
		t.Errorf("run of true while sleep runs: %+v", r)
	}
	start := time.Now()
	c.send(serveRequest{Op: "cancel", Of: 5})
	if r := c.recv(); r.ID != 5 || r.Error == "" {
		t.Errorf("cancelled run: %+v", r)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("the cancelled run took %s to end", time.Since(start))
	}
	// A watch of an attempt that does not end answers after its wait, the records read
	// meanwhile every poll.
	start = time.Now()
	c.send(serveRequest{ID: 8, Op: "watch", Bead: "b1", Number: 1, WaitMS: 300, PollMS: 20})
	if r := c.recv(); r.ID != 8 || r.Snapshot == nil || r.Snapshot.Bead != "b1" || time.Since(start) < 300*time.Millisecond {
		t.Errorf("watch: %+v after %s, want the snapshot after 300ms", r, time.Since(start))
	}
	if reads.Load() < 5 {
		t.Errorf("the watch read the records %d times in 300ms, polling every 20ms", reads.Load())
	}
	c.send(serveRequest{ID: 7, Op: "what"})
	if r := c.recv(); r.ID != 7 || !strings.Contains(r.Error, "unknown op") {
		t.Errorf("unknown op: %+v", r)
	}
	c.in.Close()
	if err := <-c.end; err != nil {
		t.Errorf("Serve after its stdin ended: %v", err)
	}
}

// TestServeOutputBounded: a command printing past the bound is killed, and its answer says so
// with what it printed up to the bound.
func TestServeOutputBounded(t *testing.T) {
	c := newServeClient(t, nil)
	c.send(serveRequest{ID: 1, Op: "run", Argv: []string{"sh", "-c", "yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}})
	r := c.recv()
	if r.ID != 1 || !r.TooLarge || len(r.Stdout) != DefaultMaxOutput {
		t.Errorf("unbounded output: too_large %v, %d bytes kept", r.TooLarge, len(r.Stdout))
	}
}

// TestReadLineBounded: a line of the host's server longer than the bound is an error, not a
// buffer without end.
func TestReadLineBounded(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 1<<20)+"\n"), 4096)
	if _, err := readLine(r, 64<<10); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("readLine of a 1 MiB line with a 64 KiB bound: %v", err)
	}
	r = bufio.NewReaderSize(strings.NewReader("short\n"), 4096)
	if line, err := readLine(r, 64<<10); err != nil || string(line) != "short\n" {
		t.Errorf("readLine = %q, %v", line, err)
	}
}
