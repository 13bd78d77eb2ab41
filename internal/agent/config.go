package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// The environment variables that name an agents config. The tools read them through the lookup
// function their command line passes (os.LookupEnv), never from the process environment here.
const (
	// ConfigEnv names the agents config of dispatch, ralph's AIWG loops and ralph's queue
	// (dispatch.sh's CONFIG_FILE).
	ConfigEnv = "CONFIG_FILE"
	// WorkspaceEnv names the workspace a shim (scripts/shim.sh) runs a tool for: its
	// config/agents.json is the agents config unless ConfigEnv is set.
	WorkspaceEnv = "FLEET_WORKSPACE"
	// SwarmConfigEnv names swarm's agents config, the profiles that watch its workers' screens.
	SwarmConfigEnv = "SWARM_AGENTS"
)

// ConfigName is the agents config's path inside a workspace (or a tool's directory).
const ConfigName = "config/agents.json"

// Origin says who named an agents config file, which decides what its absence means.
type Origin int

const (
	// FromDefault is the tool's own default place: a missing file there is no error, the
	// built-in agents stand in.
	FromDefault Origin = iota
	// FromEnv is a file an environment variable names (ConfigFile.Env): it must exist.
	FromEnv
	// FromWorkspace is the config/agents.json of the workspace WorkspaceEnv names: it must
	// exist, as dispatch.sh's lib/config.sh required it.
	FromWorkspace
)

// ConfigFile is the agents config file a tool reads, and who named it.
type ConfigFile struct {
	// Path is the file, relative to the caller's directory when it was given so.
	Path string
	// Origin says who named it.
	Origin Origin
	// Env is the variable that named it (FromEnv), for the messages.
	Env string
}

// ErrConfigEnvEmpty marks a config variable that is set but empty: a usage error, since the
// caller meant a file and named none (dispatch.sh: "CONFIG_FILE cannot be empty").
var ErrConfigEnvEmpty = errors.New("set but empty")

// FindConfig is the agents config of dispatch, ralph's AIWG loops and ralph's queue, in the one
// order the drop-in needs:
//
//  1. CONFIG_FILE, when it is set: that file (relative to the caller's directory, as in
//     dispatch.sh), which must exist. Set but empty, it is an error wrapping ErrConfigEnvEmpty.
//  2. FLEET_WORKSPACE, when it is set and not empty (a shim runs the tool for a workspace):
//     <workspace>/config/agents.json, which must exist. A config/agents.json in dir is not the
//     workspace's and does not count.
//  3. dir/config/agents.json, dir being the tool's own directory ("" for the caller's: dispatch
//     and the queue; the loop's workspace for AIWG). Missing, the built-in claude and codex
//     stand in (LoadConfig).
//
// lookupEnv reads the environment (os.LookupEnv).
func FindConfig(lookupEnv func(string) (string, bool), dir string) (ConfigFile, error) {
	ws, _ := lookupEnv(WorkspaceEnv)
	def := ConfigFile{Path: filepath.Join(dir, ConfigName), Origin: FromDefault}
	if ws != "" {
		def = ConfigFile{Path: filepath.Join(ws, ConfigName), Origin: FromWorkspace}
	}
	if v, ok := lookupEnv(ConfigEnv); ok {
		if v == "" {
			return ConfigFile{}, fmt.Errorf("%s is %w; name the agents config, or unset it for %s", ConfigEnv, ErrConfigEnvEmpty, def.Path)
		}
		return ConfigFile{Path: v, Origin: FromEnv, Env: ConfigEnv}, nil
	}
	return def, nil
}

// SwarmConfig is swarm's agents config: SWARM_AGENTS when it is set and not empty (the file
// must exist), else swarmDir/agents.json (missing: swarm's built-in screen profiles stand in).
// It is a lookup of its own, not FindConfig's: the file holds the profiles that watch a swarm's
// workers' screens, one per swarm directory, and dispatch's CONFIG_FILE or a workspace must not
// change them.
func SwarmConfig(lookupEnv func(string) (string, bool), swarmDir string) ConfigFile {
	if v, _ := lookupEnv(SwarmConfigEnv); v != "" {
		return ConfigFile{Path: v, Origin: FromEnv, Env: SwarmConfigEnv}
	}
	return ConfigFile{Path: filepath.Join(swarmDir, "agents.json"), Origin: FromDefault}
}

// Load reads the file (Load). One that must exist and is missing is an error saying who named
// it and what to do; a default one that is missing is an error wrapping ErrNoConfig, which the
// caller answers with its built-in agents (LoadConfig does).
func (f ConfigFile) Load() (*Config, error) {
	cfg, err := Load(f.Path)
	if err == nil || !errors.Is(err, ErrNoConfig) {
		return cfg, err
	}
	switch f.Origin {
	case FromEnv:
		return nil, fmt.Errorf("%w; %s names it: point it at the agents config, or unset it", err, f.Env)
	case FromWorkspace:
		return nil, fmt.Errorf("%w; the workspace's agents config is needed, as dispatch.sh needed it: create it, or set %s", err, ConfigEnv)
	}
	return nil, err
}

// LoadOrBuiltin is Load, with the built-in claude and codex (Builtin) for a default file that
// is missing: the config of dispatch, AIWG's loops and the queue.
func (f ConfigFile) LoadOrBuiltin() (*Config, error) {
	cfg, err := f.Load()
	if errors.Is(err, ErrNoConfig) && f.Origin == FromDefault {
		return Builtin(), nil
	}
	return cfg, err
}

// LoadConfig is the agents config FindConfig names, loaded (LoadOrBuiltin).
func LoadConfig(lookupEnv func(string) (string, bool), dir string) (*Config, error) {
	f, err := FindConfig(lookupEnv, dir)
	if err != nil {
		return nil, err
	}
	return f.LoadOrBuiltin()
}

// ErrEmptyModel marks an AGENT:MODEL whose colon has no model after it.
var ErrEmptyModel = errors.New("empty model after the colon")

// ParseSpec splits an agent as the tools take it, AGENT or AGENT:MODEL, at its first colon (a
// model name may hold colons; an agent name may not). A colon with nothing after it is an error
// wrapping ErrEmptyModel, as dispatch.sh refused it; model is "" without a colon, and the
// agent's default applies (Profile.Model). The name is not checked here: Config.Lookup says
// which names there are.
func ParseSpec(s string) (name, model string, err error) {
	name, model, colon := strings.Cut(s, ":")
	if colon && model == "" {
		return "", "", fmt.Errorf("%w in %q; give AGENT:MODEL or AGENT", ErrEmptyModel, s)
	}
	return name, model, nil
}
