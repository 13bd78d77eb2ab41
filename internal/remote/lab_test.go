package remote

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
