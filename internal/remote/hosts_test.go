package remote

import (
	"strings"
	"testing"
)

func TestParseHosts(t *testing.T) {
	good := `hosts:
  - name: h1
    ssh: agent@10.0.0.2
    port: 2222
    identity: ~/.ssh/id_ed25519
    max_agents: 4
    repo: /srv/app
    agents_config: /srv/agents.json
  - name: h2
    ssh: h2.example
    repo: /srv/app
    env: {DISPATCH_BACKEND: process}
`
	hs, err := ParseHostsBytes("hosts.yaml", []byte(good), "/home/u")
	if err != nil {
		t.Fatalf("ParseHostsBytes: %v", err)
	}
	h1, err := hs.Find("h1")
	if err != nil {
		t.Fatal(err)
	}
	if h1.Identity != "/home/u/.ssh/id_ed25519" || h1.Port != 2222 || h1.MaxAgents != 4 || h1.StateDir != DefaultStateDir || h1.Line != 2 {
		t.Errorf("h1 = %+v", h1)
	}
	h2, _ := hs.Find("h2")
	if h2.MaxAgents != 1 || h2.Env["DISPATCH_BACKEND"] != "process" {
		t.Errorf("h2 = %+v", h2)
	}
	if _, err := hs.Find("h3"); err == nil || !strings.Contains(err.Error(), "h1, h2") {
		t.Errorf("Find(h3) = %v, want the hosts named", err)
	}
}

func TestParseHostsErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"", "hosts.yaml:1: expected a mapping"},
		{"hosts: []\n", "hosts.yaml:1: 'hosts:' must be a list"},
		{"hots:\n  - name: a\n", `hosts.yaml:1: unknown key "hots"`},
		{"hosts:\n  - name: a\n    ssh: x\n    repo: /r\n    identiy: k\n", `hosts.yaml:5: unknown key "identiy"`},
		{"hosts:\n  - ssh: x\n    repo: /r\n", "hosts.yaml:2: a host needs a name"},
		{"hosts:\n  - name: a\n    repo: /r\n", `hosts.yaml:2: host "a" needs ssh:`},
		{"hosts:\n  - name: a\n    ssh: -oProxyCommand=x\n    repo: /r\n", `hosts.yaml:3: host "a": ssh "-oProxyCommand=x" is not an ssh destination`},
		{"hosts:\n  - name: a\n    ssh: 'a;b'\n    repo: /r\n", `hosts.yaml:3: host "a": ssh "a;b"`},
		{"hosts:\n  - name: a\n    ssh: x\n", `hosts.yaml:2: host "a" needs repo:`},
		{"hosts:\n  - name: a\n    ssh: x\n    repo: srv\n", `hosts.yaml:4: host "a": repo "srv" must be an absolute path`},
		{"hosts:\n  - name: a\n    ssh: x\n    repo: /r\n    port: 70000\n", `hosts.yaml:5: host "a": port 70000`},
		{"hosts:\n  - name: a\n    ssh: x\n    repo: /r\n    port: twenty\n", `hosts.yaml:5:`},
		{"hosts:\n  - name: a\n    ssh: x\n    repo: /r\n    max_agents: 0\n", `hosts.yaml:5: host "a": max_agents must be at least 1`},
		{"hosts:\n  - name: a\n    ssh: x\n    repo: /r\n  - name: a\n    ssh: y\n    repo: /r\n", `hosts.yaml:5: host "a" is named twice (first at line 2)`},
		{"hosts:\n  - name: ../a\n    ssh: x\n    repo: /r\n", `hosts.yaml:2: host name "../a"`},
		{"hosts:\n  - name: a\n    ssh: x\n    repo: /r\n    env: {lower: 1}\n", `hosts.yaml:5: host "a": env name "lower"`},
		{"hosts:\n  - name: a\n  ssh: x\n", "hosts.yaml:"},
		{"hosts:\n  - just a string\n", "hosts.yaml:2: a host is a mapping"},
	} {
		_, err := ParseHostsBytes("hosts.yaml", []byte(tc.doc), "")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseHostsBytes(%q) = %v, want one line starting %q", tc.doc, err, tc.want)
		}
	}
}
