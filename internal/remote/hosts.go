package remote

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentfleet/fleet/internal/statedir"
	"gopkg.in/yaml.v3"
)

// maxHostsFile bounds what ParseHosts reads: a list of machines, not a data set.
const maxHostsFile = 1 << 20

// Host is one machine of hosts.yaml: where our binaries run agents on a clone of the
// repository, reached over OpenSSH.
type Host struct {
	Name string // how the fleet names it (--host NAME); a state name ([A-Za-z0-9][A-Za-z0-9._-]*)
	// SSH is the ssh destination, [user@]host (no options: a destination that starts with '-'
	// is refused, so it can never be read by ssh as a flag).
	SSH  string
	Port int // 0: ssh's default (the user's config, else 22)
	// Identity is the private key (-i, ~ expanded); "" leaves the choice to ssh and the user's
	// agent and config.
	Identity string
	// KnownHosts is a known_hosts file to check the host's key against (UserKnownHostsFile,
	// with StrictHostKeyChecking=yes); "" keeps the user's ssh config and its checking.
	KnownHosts string
	MaxAgents  int    // how many agents the host runs at once (default 1)
	Repo       string // the repository's clone there (an absolute path)
	// AgentsConfig is config/agents.json there (CONFIG_FILE of the host's dispatch), optional.
	AgentsConfig string
	// Bin is the directory of our binaries there; "" finds them on the remote PATH.
	Bin string
	// StateDir is the state directory of the host's dispatch; "" is .fleet/state in the
	// remote user's home (ssh starts commands there).
	StateDir string
	// Env is more environment for our binaries there (DISPATCH_TMUX_SOCKET, DISPATCH_BACKEND,
	// ...): names of capitals, digits and _ only.
	Env map[string]string

	Line int // where the host's entry starts in its file, for messages
}

// DefaultStateDir is the host's state directory when hosts.yaml names none, relative to the
// remote user's home.
const DefaultStateDir = ".fleet/state"

// Hosts is a parsed hosts.yaml.
type Hosts struct {
	File  string
	Hosts []Host
}

// Find returns the host called name, or an error naming the ones there are.
func (h *Hosts) Find(name string) (*Host, error) {
	var names []string
	for i := range h.Hosts {
		if h.Hosts[i].Name == name {
			return &h.Hosts[i], nil
		}
		names = append(names, h.Hosts[i].Name)
	}
	return nil, fmt.Errorf("%s: no host %q; the hosts are %s", h.File, name, strings.Join(names, ", "))
}

// rawHost is a host as written, with yaml's nodes for the lines of its errors.
type rawHost struct {
	Name         string            `yaml:"name"`
	SSH          string            `yaml:"ssh"`
	Port         int               `yaml:"port"`
	Identity     string            `yaml:"identity"`
	KnownHosts   string            `yaml:"known_hosts"`
	MaxAgents    *int              `yaml:"max_agents"`
	Repo         string            `yaml:"repo"`
	AgentsConfig string            `yaml:"agents_config"`
	Bin          string            `yaml:"bin"`
	StateDir     string            `yaml:"state_dir"`
	Env          map[string]string `yaml:"env"`
}

var envName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// ParseHosts reads and checks a hosts.yaml. home expands a leading ~ in identity and
// known_hosts (the local user's home; "" leaves ~ as written). Every error names file:line.
func ParseHosts(path, home string) (*Hosts, error) {
	b, err := statedir.ReadFile(path, maxHostsFile)
	if err != nil {
		return nil, fmt.Errorf("reading hosts file: %w", err)
	}
	if len(b) > maxHostsFile {
		return nil, fmt.Errorf("%s: over %d bytes; a hosts file lists machines", path, maxHostsFile)
	}
	return ParseHostsBytes(path, b, home)
}

// ParseHostsBytes is ParseHosts on the file's bytes; path names it in errors.
func ParseHostsBytes(path string, b []byte, home string) (*Hosts, error) {
	p := &hostsParser{path: path, home: home, seen: map[string]int{}}
	list, err := p.hostList(b)
	if err != nil {
		return nil, err
	}
	hs := &Hosts{File: path}
	for _, n := range list.Content {
		h, err := p.host(n)
		if err != nil {
			return nil, err
		}
		hs.Hosts = append(hs.Hosts, h)
	}
	return hs, nil
}

// hostsParser is one ParseHostsBytes: the file's path and home for messages and ~, and the
// line each host name was first given at.
type hostsParser struct {
	path, home string
	seen       map[string]int
}

// at is an error at line of the file.
func (p *hostsParser) at(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.path, line, fmt.Sprintf(format, args...))
}

// hostList decodes b and returns its 'hosts:' list: a top-level mapping of that key alone,
// holding a list of at least one host.
func (p *hostsParser) hostList(b []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) || strings.HasPrefix(err.Error(), "yaml: line ") {
			return nil, fmt.Errorf("%s:%s", p.path, strings.TrimPrefix(err.Error(), "yaml: line "))
		}
		return nil, fmt.Errorf("%s: %v", p.path, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, p.at(1, "expected a mapping with a 'hosts:' list")
	}
	top := doc.Content[0]
	var list *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		switch k := top.Content[i]; k.Value {
		case "hosts":
			list = top.Content[i+1]
		default:
			return nil, p.at(k.Line, "unknown key %q; hosts.yaml has 'hosts:'", k.Value)
		}
	}
	if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		line := top.Line
		if list != nil {
			line = list.Line
		}
		return nil, p.at(line, "'hosts:' must be a list of at least one host")
	}
	return list, nil
}

// host reads and checks the host n of the list.
func (p *hostsParser) host(n *yaml.Node) (Host, error) {
	if n.Kind != yaml.MappingNode {
		return Host{}, p.at(n.Line, "a host is a mapping (name:, ssh:, repo:, ...)")
	}
	keyLine, err := p.hostKeys(n)
	if err != nil {
		return Host{}, err
	}
	lineOf := func(key string) int {
		if l, ok := keyLine[key]; ok {
			return l
		}
		return n.Line
	}
	var r rawHost
	if err := n.Decode(&r); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			return Host{}, fmt.Errorf("%s:%s", p.path, strings.TrimPrefix(te.Errors[0], "line "))
		}
		return Host{}, p.at(n.Line, "%v", err)
	}
	h := Host{Name: r.Name, SSH: r.SSH, Port: r.Port, Repo: r.Repo, AgentsConfig: r.AgentsConfig,
		Bin: r.Bin, StateDir: r.StateDir, Env: r.Env, MaxAgents: 1, Line: n.Line,
		Identity: expandHome(r.Identity, p.home), KnownHosts: expandHome(r.KnownHosts, p.home)}
	if err := p.checkHost(h, n.Line, lineOf); err != nil {
		return Host{}, err
	}
	if r.MaxAgents != nil {
		if *r.MaxAgents < 1 {
			return Host{}, p.at(lineOf("max_agents"), "host %q: max_agents must be at least 1, got %d", h.Name, *r.MaxAgents)
		}
		h.MaxAgents = *r.MaxAgents
	}
	for k := range h.Env {
		if !envName.MatchString(k) {
			return Host{}, p.at(lineOf("env"), "host %q: env name %q: use capitals, digits and _", h.Name, k)
		}
	}
	if h.StateDir == "" {
		h.StateDir = DefaultStateDir
	}
	p.seen[h.Name] = lineOf("name")
	return h, nil
}

// hostKeys returns the line of each key of the host n. Unknown keys are refused: a misspelt
// 'identiy:' must not silently mean ssh's default.
func (p *hostsParser) hostKeys(n *yaml.Node) (map[string]int, error) {
	keyLine := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		switch k.Value {
		case "name", "ssh", "port", "identity", "known_hosts", "max_agents", "repo", "agents_config", "bin", "state_dir", "env":
			keyLine[k.Value] = k.Line
		default:
			return nil, p.at(k.Line, "unknown key %q in a host (name, ssh, port, identity, known_hosts, max_agents, repo, agents_config, bin, state_dir, env)", k.Value)
		}
	}
	return keyLine, nil
}

// checkHost checks the name, destination, port and paths of h, the host at line; lineOf is
// the line of one of its keys.
func (p *hostsParser) checkHost(h Host, line int, lineOf func(key string) int) error {
	switch {
	case h.Name == "":
		return p.at(line, "a host needs a name")
	case statedir.CheckName(statedir.KindWorker, h.Name) != nil:
		return p.at(lineOf("name"), "host name %q: use letters, digits, '.', '_' and '-'", h.Name)
	case p.seen[h.Name] != 0:
		return p.at(lineOf("name"), "host %q is named twice (first at line %d)", h.Name, p.seen[h.Name])
	case h.SSH == "":
		return p.at(line, "host %q needs ssh: (an ssh destination, user@host)", h.Name)
	case strings.HasPrefix(h.SSH, "-") || strings.ContainsAny(h.SSH, " \t\r\n'\"\\;&|$`<>()*?[]{}!#~") || strings.Contains(h.SSH, "://"):
		return p.at(lineOf("ssh"), "host %q: ssh %q is not an ssh destination ([user@]host)", h.Name, h.SSH)
	case h.Port < 0 || h.Port > 65535:
		return p.at(lineOf("port"), "host %q: port %d is not a TCP port", h.Name, h.Port)
	case h.Repo == "":
		return p.at(line, "host %q needs repo: (the path of the repository's clone there)", h.Name)
	case !strings.HasPrefix(h.Repo, "/"):
		return p.at(lineOf("repo"), "host %q: repo %q must be an absolute path", h.Name, h.Repo)
	case h.Bin != "" && !strings.HasPrefix(h.Bin, "/"):
		return p.at(lineOf("bin"), "host %q: bin %q must be an absolute path", h.Name, h.Bin)
	case strings.ContainsAny(h.Repo+h.Bin+h.StateDir+h.AgentsConfig, "\x00\n"):
		return p.at(line, "host %q: a path holds a newline or NUL", h.Name)
	}
	return nil
}

// expandHome expands a leading ~/ (or a lone ~) to home.
func expandHome(p, home string) string {
	if home == "" {
		return p
	}
	if p == "~" {
		return home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(home, p[2:])
	}
	return p
}
