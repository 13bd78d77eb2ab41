package remote

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/testenv/sshlab"
)

// labHosts makes a lab of n sshd hosts and their hosts.yaml entries.
func labHosts(t *testing.T, n int) (*sshlab.Lab, []*Host) {
	if testing.Short() {
		t.Skip("starts sshd hosts in network namespaces")
	}
	lab := sshlab.New(t, n)
	var hs []*Host
	for _, h := range lab.Hosts {
		hs = append(hs, &Host{Name: h.Name, SSH: h.Dest, Identity: lab.Key, KnownHosts: lab.KnownHosts,
			MaxAgents: 1, Repo: "/nonexistent", StateDir: filepath.Join(t.TempDir(), "state")})
	}
	return lab, hs
}

func newDialer(t *testing.T, o Options) *Dialer {
	d, err := NewDialer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestRunOverSSH: one master per host; hostile words reach the host's program as they were,
// the prompt-like text on stdin too; many commands at once share the one connection.
func TestRunOverSSH(t *testing.T) {
	_, hs := labHosts(t, 1)
	ctx := context.Background()
	d := newDialer(t, Options{})
	c, err := d.Dial(ctx, hs[0])
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	words := []string{"a b", "it's", "$(touch /tmp/fleet-pwned)", "`id`", ";", "~", "*"}
	res, err := c.Run(ctx, Cmd{Argv: append([]string{"printf", `%s\n`}, words...)})
	if err != nil || res.Code != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if got := strings.Split(strings.TrimSuffix(string(res.Stdout), "\n"), "\n"); strings.Join(got, "|") != strings.Join(words, "|") {
		t.Errorf("the host read %q, want %q", got, words)
	}
	res, err = c.Run(ctx, Cmd{Argv: []string{"cat"}, Stdin: strings.NewReader("prompt $(x) 'q'\n")})
	if err != nil || string(res.Stdout) != "prompt $(x) 'q'\n" {
		t.Errorf("cat of stdin = %q, %v", res.Stdout, err)
	}
	res, err = c.Run(ctx, Cmd{Argv: []string{"sh", "-c", "exit 7"}})
	if err != nil || res.Code != 7 {
		t.Errorf("exit 7: %+v, %v", res, err)
	}
	res, err = c.Run(ctx, Cmd{Argv: []string{"env"}, Env: []string{"FLEET_X=a b"}})
	if err != nil || !strings.Contains(string(res.Stdout), "FLEET_X=a b\n") {
		t.Errorf("env: %q, %v", res.Stdout, err)
	}
	// Twenty at once: all through the master (sshd's MaxSessions is 64; without the master
	// each would be a connection of its own, which ss would show).
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Run(ctx, Cmd{Argv: []string{"true"}}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("parallel Run: %v", err)
	}
	out, _ := exec.Command("ss", "-tn", "state", "established", "dst", hs[0].SSH[strings.Index(hs[0].SSH, "@")+1:]).Output()
	if n := strings.Count(string(out), ":22"); n != 1 {
		t.Errorf("%d connections to the host, want 1 (the master):\n%s", n, out)
	}
	if _, err := os.Stat("/tmp/fleet-pwned"); err == nil {
		t.Errorf("a word ran as a command on the host")
	}
}

// TestUnreachableAtDial: a host whose key is not the known one, and a host that is not
// there, fail Dial with one line wrapping ErrUnreachable.
func TestUnreachableAtDial(t *testing.T) {
	lab, hs := labHosts(t, 1)
	ctx := context.Background()
	d := newDialer(t, Options{ConnectTimeout: 2 * time.Second})
	wrongKnown := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(wrongKnown, nil, 0o600)
	bad := *hs[0]
	bad.KnownHosts = wrongKnown
	_, err := d.Dial(ctx, &bad)
	if !errors.Is(err, ErrUnreachable) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "Host key verification failed") {
		t.Errorf("Dial with an unknown host key = %v, want one line: host key verification failed", err)
	}
	lab.Cut(t, 0)
	start := time.Now()
	_, err = d.Dial(ctx, hs[0])
	if !errors.Is(err, ErrUnreachable) || strings.Contains(err.Error(), "\n") {
		t.Errorf("Dial of a host cut off = %v, want one line wrapping ErrUnreachable", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("Dial of a host cut off took %s, want about ConnectTimeout (2s)", time.Since(start))
	}
}

// TestHostOutputBounded: a host's command printing without end is read up to the bound and no
// further: its Run fails with ErrOutputTooLarge naming the bound, what is kept is at most the
// bound, the command is stopped (on the host too) rather than read to its end, and a stream
// given to Run (the host's dispatch's console lines) is bounded the same way.
func TestHostOutputBounded(t *testing.T) {
	_, hs := labHosts(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const bound = 64 << 10
	d := newDialer(t, Options{MaxOutput: bound})
	c, err := d.Dial(ctx, hs[0])
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	// yes never ends by itself: only the bound stops it.
	marker := "fleet-flood-" + strconv.Itoa(os.Getpid())
	res, err := c.Run(ctx, Cmd{Argv: []string{"yes", marker}})
	if !errors.Is(err, ErrOutputTooLarge) || !strings.Contains(err.Error(), "64.0 KiB") {
		t.Fatalf("Run of a flood = %v, want ErrOutputTooLarge naming the bound (64.0 KiB)", err)
	}
	if res == nil || len(res.Stdout) > bound {
		t.Errorf("kept %d bytes of the flood, want at most %d", len(res.Stdout), bound)
	}
	waitGone(t, marker)

	var stream countingWriter
	_, err = c.Run(ctx, Cmd{Argv: []string{"sh", "-c", "head -c 10000000 /dev/zero >&2"}, Stderr: &stream})
	if !errors.Is(err, ErrOutputTooLarge) || stream.n > bound {
		t.Errorf("a flood on stderr: %v, %d bytes passed on; want ErrOutputTooLarge and at most %d", err, stream.n, bound)
	}
	// Under the bound, all of it.
	res, err = c.Run(ctx, Cmd{Argv: []string{"head", "-c", strconv.Itoa(bound), "/dev/zero"}})
	if err != nil || len(res.Stdout) != bound {
		t.Errorf("output of exactly the bound: %d bytes, %v", len(res.Stdout), err)
	}
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	return len(b), nil
}

// waitGone waits until no process's command line holds marker (the hosts share this machine's
// processes), or fails after a generous time.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pids := pidsNaming(marker)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v naming %s still run", pids, marker)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func pidsNaming(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() && namesIn(pid, s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestDeadMasterReplaced: a master killed (its socket left behind) is found dead by ssh -O
// check: a command then fails with ErrNoMaster rather than connecting on its own, Reconnect
// removes the socket and starts a new master, and Close ends even a master that hangs, so
// that no ssh process of the Dialer's outlives it.
func TestDeadMasterReplaced(t *testing.T) {
	_, hs := labHosts(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := newDialer(t, Options{})
	c, err := d.Dial(ctx, hs[0])
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	first := c.pid
	if first == 0 || !namesIn(first, c.controlArg()...) {
		t.Fatalf("the master's pid %d is not known", first)
	}
	syscall.Kill(first, syscall.SIGKILL)
	waitPidGone(t, first)
	if _, err := os.Lstat(c.control); err != nil {
		t.Fatalf("the killed master's socket is gone (%v): the test needs it left behind", err)
	}
	if res, err := c.Run(ctx, Cmd{Argv: []string{"true"}}); !errors.Is(err, ErrNoMaster) {
		t.Fatalf("Run with the master killed = %+v, %v; want ErrNoMaster, not a connection of its own", res, err)
	}
	if err := c.Push(ctx, t.TempDir(), "main"); !errors.Is(err, ErrNoMaster) {
		t.Errorf("Push with the master killed = %v, want ErrNoMaster", err)
	}
	if err := c.Reconnect(ctx); err != nil {
		t.Fatalf("Reconnect after the master was killed: %v", err)
	}
	if res, err := c.Run(ctx, Cmd{Argv: []string{"true"}}); err != nil || res.Code != 0 {
		t.Fatalf("Run after Reconnect = %+v, %v", res, err)
	}
	second := c.pid
	if second == first || !namesIn(second, c.controlArg()...) {
		t.Fatalf("the new master's pid is %d (the old one's %d)", second, first)
	}
	// A master that hangs answers neither -O check nor -O exit: Close kills it.
	syscall.Kill(second, syscall.SIGSTOP)
	start := time.Now()
	d.Close()
	if time.Since(start) > 30*time.Second {
		t.Errorf("Close with a hung master took %s", time.Since(start))
	}
	waitGone(t, d.dir+"/")
}

func waitPidGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still there", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHungCommandEndedOnHost: a host's command that outlives its Run's timeout (a read that
// hangs there) is ended on the host too, not only its ssh here; and a command run this way
// still gets its exit status and output.
func TestHungCommandEndedOnHost(t *testing.T) {
	_, hs := labHosts(t, 1)
	ctx := context.Background()
	d := newDialer(t, Options{})
	c, err := d.Dial(ctx, hs[0])
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	res, err := c.Run(ctx, Cmd{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	if err != nil || res.Code != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	marker := "fleet-hung-" + strconv.Itoa(os.Getpid())
	started := filepath.Join(t.TempDir(), "started")
	// The read is given up (as a Run's timeout does) once it has started there.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() {
		_, err := c.Run(rctx, Cmd{Argv: []string{"sh", "-c", `: > "$1"; while :; do sleep 1; done`, marker, started}})
		ran <- err
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never started on the host")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-ran; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run of a hung command given up = %v, want context.Canceled", err)
	}
	waitGone(t, marker)
}
