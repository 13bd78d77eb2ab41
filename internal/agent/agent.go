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
package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
	MCPConfig    string // claude: --mcp-config PATH, when set
	// ReasoningFlag and ReasoningKey pass a reasoning effort (codex: -c model_reasoning_effort="high").
	ReasoningFlag, ReasoningKey string
	// Terminal runs the agent on a terminal of its own, as it ran in a tmux pane under
	// dispatch.sh (the default); "terminal": false gives it plain pipes.
	Terminal bool
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
	Terminal     *bool             `json:"terminal"`
	AgentMode    *mode             `json:"agent_mode"`
	ExecMode     *mode             `json:"exec_mode"`
	Reasoning    *struct {
		Flag string `json:"flag"`
	} `json:"reasoning_effort"`
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
			ModelFlag: "--model", DefaultModel: "opus", Prompt: PromptStdin, Models: map[string]string{}, Terminal: true},
		"codex": {Name: "codex", Command: "codex", Subcommand: "exec", Flags: []string{"--yolo"},
			ModelFlag: "-m", DefaultModel: "gpt-5.3-codex", Prompt: PromptStdin, Models: map[string]string{},
			ReasoningFlag: "-c", ReasoningKey: "model_reasoning_effort", Terminal: true},
	}, Repos: map[string]Repo{}}
}

// Load reads the config at path. A missing file gives the built-in defaults; a file that is
// there but broken is an error, never silently replaced.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Builtin(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading agent config: %w", err)
	}
	cfg, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("agent config %s: %w", path, err)
	}
	cfg.Path = path
	return cfg, nil
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
		Prompt: e.Prompt, PromptFlag: e.PromptFlag, MCPConfig: e.MCPConfig, Terminal: e.Terminal == nil || *e.Terminal}
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
		p.ReasoningFlag, p.ReasoningKey = e.Reasoning.Flag, "model_reasoning_effort"
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

// Model resolves the model to use: the colon suffix of AGENT:MODEL, else the environment's
// DISPATCH_<AGENT>_MODEL, else the profile's default; aliases resolve through the profile's
// models map.
func (p *Profile) Model(suffix string, getenv func(string) string) string {
	m := suffix
	if m == "" {
		m = getenv("DISPATCH_" + envName(p.Name) + "_MODEL")
	}
	if m == "" {
		m = p.DefaultModel
	}
	if alias, ok := p.Models[m]; ok && alias != "" {
		m = alias
	}
	if m == "" {
		m = DefaultModel
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

// Invoke builds the invocation for model and prompt. promptFile is where a prompt file goes for
// agents that take one; effort is a reasoning effort ("" for none).
func (p *Profile) Invoke(model, prompt, promptFile, effort string) Invocation {
	argv := []string{p.Command}
	if p.Subcommand != "" {
		argv = append(argv, p.Subcommand)
	}
	if p.ModelFlag != "" && model != "" && model != DefaultModel {
		// codex takes "-m <model>" right after its subcommand, as dispatch.sh wrote it.
		if p.Subcommand != "" {
			argv = append(argv, p.ModelFlag, model)
			argv = append(argv, p.Flags...)
		} else {
			argv = append(argv, p.Flags...)
			argv = append(argv, p.ModelFlag, model)
		}
	} else {
		argv = append(argv, p.Flags...)
	}
	if p.MCPConfig != "" {
		argv = append(argv, "--mcp-config", p.MCPConfig)
	}
	if effort != "" && p.ReasoningFlag != "" {
		argv = append(argv, p.ReasoningFlag, fmt.Sprintf("%s=%q", p.ReasoningKey, effort))
	}
	inv := Invocation{}
	switch p.Prompt {
	case PromptArg:
		if p.PromptFlag != "" {
			argv = append(argv, p.PromptFlag)
		}
		argv = append(argv, prompt)
	case PromptFile:
		if p.PromptFlag != "" {
			argv = append(argv, p.PromptFlag)
		}
		argv = append(argv, promptFile)
		inv.PromptFile = promptFile
	default:
		inv.Stdin = true
	}
	inv.Argv = argv
	return inv
}

// Verify returns the verification command configured for repo, if any.
func (c *Config) Verify(repo string) (Repo, bool) {
	r, ok := c.Repos[filepath.Clean(repo)]
	return r, ok && r.TestCmd != ""
}
