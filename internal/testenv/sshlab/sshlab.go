// Package sshlab is a test's own network of machines: N hosts, each a network namespace
// (ip netns) joined to this one by a veth pair, running a real OpenSSH sshd on a host key and
// a config the test generates, accepting a user key the test generates. The hosts share this
// machine's file system, so a test's binaries, repositories and agent scripts are reached at
// the same paths there. Cut takes a host off the network (ip link set … down), as a machine
// that stops answering.
//
// It needs root (ip netns) and sshd (openssh-server; make test's setup installs it on
// Debian, .ci/run and the Makefile's sshd target); where either is missing, New skips the
// test with one line saying why. Namespaces and links are named after the test process's pid,
// so tests of several processes on one machine never meet, and are removed when the test
// ends, failed or not (and a later New removes those a killed test process left).
package sshlab

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/testenv/need"
	procsweep "github.com/agentfleet/fleet/internal/testenv/sweep"
)

// Lab is a test's hosts and the keys that reach them.
type Lab struct {
	Dir        string // keys, configs, known_hosts
	Key        string // the user's private key (root on every host)
	KnownHosts string // every host's key, as ssh's UserKnownHostsFile
	User       string // the user to log in as ("root")
	Hosts      []*Host
}

// Host is one machine of the lab.
type Host struct {
	Name string // h1, h2, ...
	NS   string // its network namespace
	Link string // the veth end on this side: down cuts the host off
	Addr string // its address, reached from this side
	Dest string // user@addr, the ssh destination
	sshd *os.Process
	done chan error // sshd's Wait
}

const prefix = "fleetlab-"

// New makes n hosts, or skips t with one line saying why it cannot.
func New(t testing.TB, n int) *Lab {
	t.Helper()
	sshd := requireTools(t)
	sweep()
	pid := os.Getpid()
	requireNetns(t, pid)

	l := &Lab{Dir: t.TempDir(), User: "root"}
	// go test's timeout runs no cleanup: the watchdog of procsweep.Guard closes the lab then.
	forget := procsweep.AtTimeout(l.close)
	t.Cleanup(func() { forget(); l.close() })
	l.userKey(t)
	// sshd refuses to start without its privilege separation directory, which the Debian
	// package leaves to its service to make.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	// The sessions' HOME is the lab's own: bash started by sshd reads ~/.bashrc, and this
	// machine's root's (pyenv's rehash takes a lock, for up to a minute, when two sessions
	// start at once) is not the test's to wait on.
	home := filepath.Join(l.Dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	net := subnet(pid)
	var known bytes.Buffer
	for i := 1; i <= n; i++ {
		h := &Host{Name: "h" + strconv.Itoa(i), NS: fmt.Sprintf("%s%d-%d", prefix, pid, i),
			Link: fmt.Sprintf("fl%dh%d", pid, i), Addr: fmt.Sprintf("10.%d.%d.2", net, i)}
		h.Dest = l.User + "@" + h.Addr
		l.Hosts = append(l.Hosts, h)
		wire(t, h, fmt.Sprintf("fl%dp%d", pid, i), fmt.Sprintf("10.%d.%d.1/24", net, i))
		hostKey := filepath.Join(l.Dir, h.Name+"_host_ed25519")
		keygen(t, hostKey, h.Name)
		hpub, err := os.ReadFile(hostKey + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(hpub))
		fmt.Fprintf(&known, "%s %s %s\n", h.Addr, f[0], f[1])
		l.startSSHD(t, h, sshd, hostKey, home)
	}
	l.KnownHosts = filepath.Join(l.Dir, "known_hosts")
	if err := os.WriteFile(l.KnownHosts, known.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return l
}

// requireTools returns sshd's path, or skips t when it is not root or lacks a tool.
func requireTools(t testing.TB) (sshd string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sshlab: needs root for ip netns (network namespaces)")
	}
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/sshd"); serr != nil {
			need.Missing(t, "sshlab: sshd not installed (openssh-server: make sshd, or apt-get install openssh-server)")
		}
		sshd = "/usr/sbin/sshd"
	}
	for _, tool := range []string{"ip", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			need.Missing(t, "sshlab: "+tool+" not installed (make sshd, or apt-get install openssh-server iproute2)")
		}
	}
	return sshd
}

// requireNetns skips t unless a network namespace can be made here (a container may forbid it).
func requireNetns(t testing.TB, pid int) {
	t.Helper()
	probe := fmt.Sprintf("%s%d-probe", prefix, pid)
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		t.Skipf("sshlab: network namespaces not permitted here: %s", strings.TrimSpace(string(out)))
	}
	exec.Command("ip", "netns", "del", probe).Run()
}

// userKey makes the user's key, which every host's sshd authorizes.
func (l *Lab) userKey(t testing.TB) {
	t.Helper()
	l.Key = filepath.Join(l.Dir, "id_ed25519")
	keygen(t, l.Key, "fleet-test-user")
	pub, err := os.ReadFile(l.Key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.Dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
}

// wire makes h's network namespace and a veth pair to it: h.Link on this side with address
// local, peer on the host's with h.Addr.
func wire(t testing.TB, h *Host, peer, local string) {
	t.Helper()
	for _, args := range [][]string{
		{"netns", "add", h.NS},
		{"link", "add", h.Link, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", h.NS},
		{"addr", "add", local, "dev", h.Link},
		{"link", "set", h.Link, "up"},
		{"netns", "exec", h.NS, "ip", "addr", "add", h.Addr + "/24", "dev", peer},
		{"netns", "exec", h.NS, "ip", "link", "set", peer, "up"},
		{"netns", "exec", h.NS, "ip", "link", "set", "lo", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("sshlab: ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
}

// startSSHD starts h's sshd in its namespace, with the host key hostKey and the sessions'
// HOME home, and waits until it listens.
func (l *Lab) startSSHD(t testing.TB, h *Host, sshd, hostKey, home string) {
	t.Helper()
	cfg := filepath.Join(l.Dir, h.Name+"_sshd_config")
	conf := strings.Join([]string{
		"ListenAddress " + h.Addr, "Port 22", "HostKey " + hostKey,
		"AuthorizedKeysFile " + filepath.Join(l.Dir, "authorized_keys"),
		"PidFile none", "StrictModes no", "UsePAM no", "PermitRootLogin prohibit-password",
		"PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
		"MaxSessions 64", "MaxStartups 64", "LogLevel ERROR", "SetEnv HOME=" + home, "",
	}, "\n")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", h.NS, sshd, "-D", "-e", "-f", cfg)
	logf, err := os.Create(filepath.Join(l.Dir, h.Name+"_sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("sshlab: starting sshd for %s: %v", h.Name, err)
	}
	logf.Close()
	h.sshd, h.done = cmd.Process, make(chan error, 1)
	go func() { h.done <- cmd.Wait() }()
	waitListening(t, h, filepath.Join(l.Dir, h.Name+"_sshd.log"))
}

// Cut takes host i (0-based) off the network: its link goes down, and nothing it sends or is
// sent arrives. Its processes go on, as on a machine whose cable was pulled.
func (l *Lab) Cut(t testing.TB, i int) {
	t.Helper()
	if out, err := exec.Command("ip", "link", "set", l.Hosts[i].Link, "down").CombinedOutput(); err != nil {
		t.Fatalf("sshlab: cutting %s off: %v: %s", l.Hosts[i].Name, err, out)
	}
}

// close stops every process in the lab's namespaces (sshd, and whatever the tests started
// over ssh: supervisors, agents, tmux servers) and removes the namespaces, whose veth pairs
// go with them.
func (l *Lab) close() {
	for _, h := range l.Hosts {
		killNS(h.NS)
		if h.sshd != nil {
			h.sshd.Kill()
			<-h.done
		}
		exec.Command("ip", "netns", "del", h.NS).Run()
		exec.Command("ip", "link", "del", h.Link).Run()
	}
}

// killNS kills every process in the namespace ns, twice over a moment (a supervisor may start
// a process while the first round is under way).
func killNS(ns string) {
	for round := 0; round < 3; round++ {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if n, err := strconv.Atoi(p); err == nil {
				syscall.Kill(n, syscall.SIGKILL)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sweep removes the namespaces of test processes that are gone (killed before their cleanup).
func sweep() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || syscall.Kill(pid, 0) == nil {
			continue
		}
		killNS(name)
		exec.Command("ip", "netns", "del", name).Run()
	}
}

// subnet picks the second octet of the lab's 10.X.i.0/24 networks from the pid, moving on
// from one this machine already has a route into.
func subnet(pid int) int {
	out, _ := exec.Command("ip", "-4", "route", "show").Output()
	for k := 0; k < 100; k++ {
		x := 150 + (pid+k)%100
		if !strings.Contains(string(out), fmt.Sprintf("10.%d.", x)) {
			return x
		}
	}
	return 150 + pid%100
}

func keygen(t testing.TB, path, comment string) {
	t.Helper()
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("sshlab: ssh-keygen: %v: %s", err, out)
	}
}

// waitListening waits until the host's sshd accepts connections, or fails with its log.
func waitListening(t testing.TB, h *Host, log string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-h.done:
			b, _ := os.ReadFile(log)
			h.sshd = nil
			t.Fatalf("sshlab: sshd of %s exited: %v: %s", h.Name, err, b)
		default:
		}
		if c, err := net.DialTimeout("tcp", h.Addr+":22", time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(log)
	t.Fatalf("sshlab: sshd of %s not listening on %s:22 after 20s: %s", h.Name, h.Addr, b)
}
