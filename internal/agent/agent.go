// Package agent turns config/agents.json into command lines. Agents are data: any top-level
// entry with a "command" is an agent type, claude and codex included, so a user adds aider or
// their own script by adding an entry, not by changing code.
//
// An entry, in the format users already keep (see ../shared/compat/config-agents.example.json):
//
//	"claude": {"command": "claude",
//	           "agent_mode": {"flags": ["-p", "--dangerously-skip-permissions"], "model_flag": "--model"},
//	           "models": {"opus": "opus"}, "default_model": "opus"}
//	"codex":  {"command": "codex", "subcommand": "exec",
//	           "exec_mode": {"flags": ["exec", "--yolo"], "model_flag": "-m"}, "default_model": "gpt-5.3-codex"}
//	"aider":  {"command": "aider", "flags": ["--yes-always"], "model_flag": "--model",
//	           "prompt": "file", "prompt_flag": "--message-file"}
//
// The prompt goes on the agent's stdin unless "prompt" says "arg" (the last argument, or after
// "prompt_flag") or "file" (a file's path after "prompt_flag"). The prompt never passes
// through a shell: the command line is an argv.
//
// Two keys say what dispatch.sh did for codex by name, and default to that for an entry named
// codex: "stdin_arg" ("-": the last argument, telling the agent its prompt is on stdin) and
// "outside_git_flag" ("--skip-git-repo-check": added when the agent's directory has no .git).
// An entry named codex also gets codex's -c model_reasoning_effort without "reasoning_effort".
//
// Two optional keys say what an agent spent and when it hit a limit (usage.go): "cost_pattern",
// a regular expression whose first group is the cost in USD in its output (claude's JSON result
// needs none), and "usage_limit", the patterns of its usage-limit and rate-limit messages
// (claude's and codex's are built in; [] turns them off).
//
// Which file is the config, and how AGENT:MODEL reads, is said once for every tool (config.go):
// FindConfig (CONFIG_FILE, a workspace's, a directory's, the built-in agents), SwarmConfig
// (swarm's screen profiles) and ParseSpec.
package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentfleet/fleet/internal/fsx"
)

// Prompt delivery modes.
const (
	PromptStdin = "stdin"
	PromptArg   = "arg"
	PromptFile  = "file"
)

// Profile is how to start one agent type.
type Profile struct {
	Name         string
	Command      string
	Subcommand   string            // codex's "exec": placed first, before the model flag
	Flags        []string          // flags after the command (and subcommand)
	ModelFlag    string            // e.g. "--model"; empty: the model is not passed
	Models       map[string]string // aliases → model names
	DefaultModel string
	Prompt       string // stdin, arg or file
	PromptFlag   string // for arg and file: the flag before the prompt or its path
	MCPConfig    string // claude: --mcp-config PATH, when set and the file exists
	// StdinArg is the last argument when the prompt goes on stdin (codex: "-").
	StdinArg string
	// OutsideGitFlag is added when the agent's directory has no .git (codex:
	// "--skip-git-repo-check": it refuses to run outside a repository without it).
	OutsideGitFlag string
	// ReasoningFlag and ReasoningKey pass a reasoning effort (codex: -c model_reasoning_effort="high").
	ReasoningFlag, ReasoningKey string
	// Terminal runs the agent on a terminal of its own, as it ran in a tmux pane under
	// dispatch.sh (the default); "terminal": false gives it plain pipes.
	Terminal bool
	// Screen tells from the agent's screen whether it is ready, busy or waiting for input
	// (swarm's --ready-wait and ls' activity); see screen.go.
	Screen Patterns
	// CostPattern ("cost_pattern") finds the cost in USD in the output of an agent that does
	// not print claude's JSON result: its first group (or whole match) is the number.
	CostPattern string
	// Limits ("usage_limit") are the patterns of its usage-limit and rate-limit messages; nil
	// takes the built-in ones of its name (LimitPatterns), an empty list none. See usage.go.
	Limits []string
}

// entry is an agent's JSON form; the mode objects (agent_mode, exec_mode) are the older shape.
type entry struct {
	Command      string            `json:"command"`
	Subcommand   string            `json:"subcommand"`
	Flags        []string          `json:"flags"`
	ModelFlag    string            `json:"model_flag"`
	Models       map[string]string `json:"models"`
	DefaultModel string            `json:"default_model"`
	Prompt       string            `json:"prompt"`
	PromptFlag   string            `json:"prompt_flag"`
	MCPConfig    string            `json:"mcp_config"`
	StdinArg     *string           `json:"stdin_arg"`
	OutsideGit   *string           `json:"outside_git_flag"`
	Terminal     *bool             `json:"terminal"`
	AgentMode    *mode             `json:"agent_mode"`
	ExecMode     *mode             `json:"exec_mode"`
	Reasoning    *struct {
		Flag string `json:"flag"`
	} `json:"reasoning_effort"`
	CostPattern string   `json:"cost_pattern"`
	UsageLimit  []string `json:"usage_limit"`
	Patterns
}

type mode struct {
	Flags           []string `json:"flags"`
	ModelFlag       string   `json:"model_flag"`
	MCPConfig       string   `json:"mcp_config"`
	ConfigOverrides string   `json:"config_override_flag"`
}

// Repo is per-repository configuration: the command that verifies an agent's work.
type Repo struct {
	TestCmd string `json:"test_cmd"`
	Timeout int    `json:"timeout"` // seconds
}

// Config is a loaded config/agents.json.
type Config struct {
	Agents map[string]*Profile
	Repos  map[string]Repo // keyed by absolute path, {{HOME}} expanded
	// Path is the file the config came from ("" for the built-in defaults).
	Path string
}

// Builtin is the configuration used when there is no config file: claude and codex as
// dispatch.sh starts them.
func Builtin() *Config {
	return &Config{Agents: map[string]*Profile{
		"claude": {Name: "claude", Command: "claude", Flags: []string{"-p", "--dangerously-skip-permissions"},
			ModelFlag: "--model", DefaultModel: "opus", Prompt: PromptStdin, Models: map[string]string{}, Terminal: true,
			Screen: claudeScreen},
		"codex": {Name: "codex", Command: "codex", Subcommand: "exec", Flags: []string{"--yolo"},
			ModelFlag: "-m", DefaultModel: "gpt-5.3-codex", Prompt: PromptStdin, Models: map[string]string{},
			ReasoningFlag: "-c", ReasoningKey: reasoningKey, StdinArg: codexStdinArg,
			OutsideGitFlag: codexOutsideGitFlag, Terminal: true, Screen: codexScreen},
	}, Repos: map[string]Repo{}}
}

// What dispatch.sh added to codex's command line by name: codex reads its prompt from stdin
// only when told so by "-", and refuses a directory outside a git repository without
// --skip-git-repo-check.
const (
	codexStdinArg       = "-"
	codexOutsideGitFlag = "--skip-git-repo-check"
	reasoningKey        = "model_reasoning_effort"
)

// ErrNoConfig is returned by Load when there is no file at the path.
var ErrNoConfig = errors.New("no such file")

// Load reads the config at path. A file that is missing or broken is an error naming it,
// never silently replaced by the built-in defaults (a cron job that loses its models, aliases
// and extra agents must hear of it).
func Load(path string) (*Config, error) {
	b, err := readConfig(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("agents config %s: %w", path, ErrNoConfig)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the agents config: %w", err)
	}
	cfg, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("agents config %s: %w", path, err)
	}
	cfg.Path = path
	return cfg, nil
}

// maxConfig bounds the agents config: a few kilobytes of JSON are expected.
const maxConfig = 1 << 20

// readConfig reads the config file: a regular file only (a final link is followed, as a shell
// reads one), opened non-blocking, so a named pipe or a device given as CONFIG_FILE is refused
// at once instead of hanging dispatch, and never more than maxConfig.
func readConfig(path string) ([]byte, error) {
	b, err := fsx.ReadFileLimit(path, maxConfig)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, err
	case errors.Is(err, fsx.ErrTooLarge):
		return nil, fmt.Errorf("%s is over %d MiB: not an agents config", path, maxConfig>>20)
	case err != nil:
		return nil, fmt.Errorf("%s: %v; the agents config must be a plain file", path, err)
	}
	return b, nil
}

// Parse reads a config document.
func Parse(b []byte) (*Config, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	cfg := &Config{Agents: map[string]*Profile{}, Repos: map[string]Repo{}}
	for name, raw := range top {
		if name == "repos" {
			var repos map[string]Repo
			if err := json.Unmarshal(raw, &repos); err != nil {
				return nil, fmt.Errorf("repos: %w", err)
			}
			home, _ := os.UserHomeDir()
			for p, r := range repos {
				cfg.Repos[filepath.Clean(strings.ReplaceAll(p, "{{HOME}}", home))] = r
			}
			continue
		}
		var e entry
		if json.Unmarshal(raw, &e) != nil || e.Command == "" {
			continue // not an agent entry (a comment, a setting of another tool)
		}
		if err := checkName(name); err != nil {
			return nil, err
		}
		if _, err := e.Patterns.Compile(); err != nil {
			return nil, fmt.Errorf("agent %q: %v", name, err)
		}
		if err := checkUsageKeys(e); err != nil {
			return nil, fmt.Errorf("agent %q: %v", name, err)
		}
		cfg.Agents[name] = e.profile(name)
	}
	return cfg, nil
}

func checkName(name string) error {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("agent name %q: use letters, digits, '.', '_' and '-' only", name)
		}
	}
	return nil
}

func (e entry) profile(name string) *Profile {
	p := &Profile{Name: name, Command: e.Command, Subcommand: e.Subcommand, Flags: e.Flags,
		ModelFlag: e.ModelFlag, Models: e.Models, DefaultModel: e.DefaultModel,
		Prompt: e.Prompt, PromptFlag: e.PromptFlag, MCPConfig: e.MCPConfig, Terminal: e.Terminal == nil || *e.Terminal,
		Screen: e.Patterns, CostPattern: e.CostPattern, Limits: e.UsageLimit}
	for _, m := range []*mode{e.AgentMode, e.ExecMode} {
		if m == nil {
			continue
		}
		if len(p.Flags) == 0 {
			p.Flags = m.Flags
		}
		if p.ModelFlag == "" {
			p.ModelFlag = m.ModelFlag
		}
		if p.MCPConfig == "" {
			p.MCPConfig = m.MCPConfig
		}
	}
	// exec_mode lists the subcommand among its flags ("exec", "--yolo"); it goes first once.
	if p.Subcommand != "" {
		var rest []string
		for _, f := range p.Flags {
			if f != p.Subcommand {
				rest = append(rest, f)
			}
		}
		p.Flags = rest
	}
	if e.Reasoning != nil && e.Reasoning.Flag != "" {
		p.ReasoningFlag, p.ReasoningKey = e.Reasoning.Flag, reasoningKey
	}
	if name == "codex" {
		// dispatch.sh built codex's command line by name, whatever its entry said.
		p.StdinArg, p.OutsideGitFlag = codexStdinArg, codexOutsideGitFlag
		if p.ReasoningFlag == "" {
			p.ReasoningFlag, p.ReasoningKey = "-c", reasoningKey
		}
	}
	if e.StdinArg != nil {
		p.StdinArg = *e.StdinArg
	}
	if e.OutsideGit != nil {
		p.OutsideGitFlag = *e.OutsideGit
	}
	if p.Prompt == "" {
		p.Prompt = PromptStdin
	}
	if p.Models == nil {
		p.Models = map[string]string{}
	}
	return p
}

// Names lists the configured agent types, sorted.
func (c *Config) Names() []string {
	var names []string
	for n := range c.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the profile of the agent type name.
func (c *Config) Lookup(name string) (*Profile, error) {
	p, ok := c.Agents[name]
	if !ok {
		return nil, fmt.Errorf("unknown agent %q; configured agents: %s", name, strings.Join(c.Names(), ", "))
	}
	return p, nil
}

// Model is the model an attempt runs with, as dispatch.sh kept it: the name as the user gave
// it, which the records keep and the console prints (so reports group "sonnet" with "sonnet"
// across old and new history), and the name it resolves to through the profile's aliases,
// which only the agent's command line gets.
type Model struct {
	// Name is as given: the colon suffix, else DISPATCH_<AGENT>_MODEL, else default_model;
	// DefaultModel when the config names none.
	Name string
	// Resolved is Name through the profile's models map; "" when the config names no model,
	// and the agent gets no model flag.
	Resolved string
	// FromConfig says Name is the config's default_model (dispatch.sh said so on stderr).
	FromConfig bool
}

// Model chooses the model: the colon suffix of AGENT:MODEL, else the environment's
// DISPATCH_<AGENT>_MODEL, else the profile's default; aliases resolve through the profile's
// models map.
func (p *Profile) Model(suffix string, getenv func(string) string) Model {
	m := Model{Name: suffix}
	if m.Name == "" {
		m.Name = getenv("DISPATCH_" + envName(p.Name) + "_MODEL")
	}
	if m.Name == "" && p.DefaultModel != "" {
		m.Name, m.FromConfig = p.DefaultModel, true
	}
	if m.Name == "" {
		m.Name = DefaultModel
		return m
	}
	m.Resolved = m.Name
	if alias, ok := p.Models[m.Name]; ok && alias != "" {
		m.Resolved = alias
	}
	return m
}

// DefaultModel is the model recorded for an agent whose config names none: it runs with its
// own default, and no model flag is passed.
const DefaultModel = "default"

func envName(agent string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '.' {
			return '_'
		}
		return r
	}, strings.ToUpper(agent))
}

// Invocation is how to start an agent: its argv, and the prompt on stdin or in a file.
type Invocation struct {
	Argv []string
	// Stdin is true when the prompt goes on the agent's standard input.
	Stdin bool
	// PromptFile, for agents that read the prompt from a file, is where it must be written
	// before the agent starts.
	PromptFile string
}

// Call is what one start of an agent needs besides its profile.
type Call struct {
	Model      string // the resolved model (Model.Resolved); "" passes no model flag
	Prompt     string
	PromptFile string // where a prompt file goes, for agents that read one
	Effort     string // a reasoning effort; "" for none
	// Dir is the directory the agent works in: without a .git there, OutsideGitFlag is added.
	Dir string
}

// PassesModel says whether the agent's command line names the resolved model: only with a
// model flag in its config, and a model named (else the agent runs with its own default).
func (p *Profile) PassesModel(resolved string) bool {
	return p.ModelFlag != "" && resolved != ""
}

// Invoke builds the invocation of c. It looks at the file system twice, as dispatch.sh did:
// for a .git in c.Dir, and for the MCP config file, passed only when it exists.
func (p *Profile) Invoke(c Call) Invocation {
	argv := []string{p.Command}
	if p.Subcommand != "" {
		argv = append(argv, p.Subcommand)
	}
	if p.PassesModel(c.Model) {
		// codex takes "-m <model>" right after its subcommand, as dispatch.sh wrote it.
		if p.Subcommand != "" {
			argv = append(argv, p.ModelFlag, c.Model)
			argv = append(argv, p.Flags...)
		} else {
			argv = append(argv, p.Flags...)
			argv = append(argv, p.ModelFlag, c.Model)
		}
	} else {
		argv = append(argv, p.Flags...)
	}
	if p.MCPConfig != "" && isFile(p.MCPConfig) {
		mcp := p.MCPConfig
		// The agent starts in its repository, not where dispatch was called: a relative path
		// checked here must reach it whole.
		if abs, err := filepath.Abs(mcp); err == nil {
			mcp = abs
		}
		argv = append(argv, "--mcp-config", mcp)
	}
	if c.Effort != "" && p.ReasoningFlag != "" {
		argv = append(argv, p.ReasoningFlag, fmt.Sprintf("%s=%q", p.ReasoningKey, c.Effort))
	}
	if p.OutsideGitFlag != "" && c.Dir != "" && !exists(filepath.Join(c.Dir, ".git")) {
		argv = append(argv, p.OutsideGitFlag)
	}
	inv := Invocation{}
	switch p.Prompt {
	case PromptArg:
		if p.PromptFlag != "" {
			argv = append(argv, p.PromptFlag)
		}
		argv = append(argv, c.Prompt)
	case PromptFile:
		if p.PromptFlag != "" {
			argv = append(argv, p.PromptFlag)
		}
		argv = append(argv, c.PromptFile)
		inv.PromptFile = c.PromptFile
	default:
		inv.Stdin = true
		if p.StdinArg != "" {
			argv = append(argv, p.StdinArg)
		}
	}
	inv.Argv = argv
	return inv
}

// JSONOutput is argv asking claude for its JSON result (--output-format json), where the cost
// and the tokens are (the queue's budget and AIWG's report read them), unless the config's
// flags choose an output format already. Other agents' argv is returned as it is; argv is
// never modified.
func (p *Profile) JSONOutput(argv []string) []string {
	if p.Name != "claude" {
		return argv
	}
	for _, a := range argv {
		if a == "--output-format" || strings.HasPrefix(a, "--output-format=") {
			return argv
		}
	}
	return append(append([]string{}, argv...), "--output-format", "json")
}

// isFile says whether path is a regular file (dispatch.sh's test -f).
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// exists says whether path exists: .git is a directory in a repository, a file in a worktree.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Verify returns the verification command configured for repo, if any.
func (c *Config) Verify(repo string) (Repo, bool) {
	r, ok := c.Repos[filepath.Clean(repo)]
	return r, ok && r.TestCmd != ""
}
