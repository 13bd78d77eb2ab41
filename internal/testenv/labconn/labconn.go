// Package labconn dials the test lab's sshd hosts (internal/testenv/sshlab) from a process a test
// started and will kill: the hosts come in a JSON file the test wrote, and are dialed with the
// lab's short timeouts. It is its own package because internal/remote's tests import sshlab, so
// sshlab cannot import remote.
package labconn

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/testenv/sshlab"
)

// Dial reads the hosts in the JSON file at path ([]*remote.Host) and dials each: a host that does
// not answer is an error, as for a run's start.
func Dial(path string) ([]*remote.Conn, error) {
	var hosts []*remote.Host
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &hosts); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d, err := remote.NewDialer(remote.Options{ConnectTimeout: 2 * time.Second, AliveInterval: time.Second})
	if err != nil {
		return nil, err
	}
	var conns []*remote.Conn
	for _, h := range hosts {
		c, err := d.Dial(context.Background(), h)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// Hosts makes each host of lab one of hosts.yaml's, as the tests of the packages that run
// attempts there need it: a clone of repo of its own, our dispatch built at version (reached
// at the same path there: the hosts share the file system), the agents config at agents,
// maxAgents slots, and a kill grace of 1 s. Each host is dialed, its dispatch's version checked;
// the connections close when t ends.
func Hosts(t testing.TB, lab *sshlab.Lab, repo, agents, version string, maxAgents int) []*remote.Conn {
	t.Helper()
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-ldflags", "-X github.com/agentfleet/fleet/internal/cli.version="+version,
		"-o", filepath.Join(bin, "dispatch"), "github.com/agentfleet/fleet/cmd/dispatch").CombinedOutput(); err != nil {
		t.Fatalf("go build dispatch: %v: %s", err, out)
	}
	d, err := remote.NewDialer(remote.Options{ConnectTimeout: 2 * time.Second, AliveInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	dir := t.TempDir()
	var conns []*remote.Conn
	for _, h := range lab.Hosts {
		clone := filepath.Join(dir, h.Name, "repo")
		if _, err := git.Run(context.Background(), "", "", "clone", "-q", repo, clone); err != nil {
			t.Fatal(err)
		}
		host := &remote.Host{Name: h.Name, SSH: h.Dest, Identity: lab.Key, KnownHosts: lab.KnownHosts, MaxAgents: maxAgents,
			Repo: clone, AgentsConfig: agents, Bin: bin, StateDir: filepath.Join(dir, h.Name, "state"),
			Env: map[string]string{"DISPATCH_KILL_GRACE": "1", "DISPATCH_MIN_FREE_MB": "1"}}
		c, err := d.Dial(context.Background(), host)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CheckVersion(context.Background(), "dispatch", "dispatch version "+version); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}

// HostsFile writes dir/hosts.yaml for the command-line tests that run a binary with --hosts:
// each host of lab with a clone of repo of its own (dir/<host>/repo), its state directory
// dir/<host>/state, one agent, the agents config at agents, the toolkit's binaries in bin (the
// hosts share the file system), and the short kill grace and free-disk floor the tests run
// with. It returns the file's path.
func HostsFile(t testing.TB, lab *sshlab.Lab, dir, repo, agents, bin string) string {
	t.Helper()
	var y strings.Builder
	y.WriteString("hosts:\n")
	for _, h := range lab.Hosts {
		clone := filepath.Join(dir, h.Name, "repo")
		if _, err := git.Run(context.Background(), "", "", "clone", "-q", repo, clone); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&y, "  - name: %s\n    ssh: %s\n    identity: %s\n    known_hosts: %s\n    max_agents: 1\n    repo: %s\n"+
			"    agents_config: %s\n    bin: %s\n    state_dir: %s\n    env: {DISPATCH_KILL_GRACE: \"1\", DISPATCH_MIN_FREE_MB: \"1\"}\n",
			h.Name, h.Dest, lab.Key, lab.KnownHosts, clone, agents, bin, filepath.Join(dir, h.Name, "state"))
	}
	path := filepath.Join(dir, "hosts.yaml")
	if err := os.WriteFile(path, []byte(y.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
