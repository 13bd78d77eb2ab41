package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// env is a lookup function over a fixed environment.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFindConfig(t *testing.T) {
	for _, c := range []struct {
		name    string
		env     func(string) (string, bool)
		dir     string
		want    ConfigFile
		wantErr string
	}{
		{"nothing set: the caller's directory", env(), "", ConfigFile{Path: "config/agents.json"}, ""},
		{"nothing set: the tool's directory", env(), "/repo", ConfigFile{Path: "/repo/config/agents.json"}, ""},
		{"CONFIG_FILE", env("CONFIG_FILE", "my.json"), "/repo",
			ConfigFile{Path: "my.json", Origin: FromEnv, Env: "CONFIG_FILE"}, ""},
		{"CONFIG_FILE before the workspace", env("CONFIG_FILE", "/x/a.json", "FLEET_WORKSPACE", "/ws"), "",
			ConfigFile{Path: "/x/a.json", Origin: FromEnv, Env: "CONFIG_FILE"}, ""},
		{"the workspace before the directory", env("FLEET_WORKSPACE", "/ws"), "/repo",
			ConfigFile{Path: "/ws/config/agents.json", Origin: FromWorkspace}, ""},
		{"an empty workspace is none", env("FLEET_WORKSPACE", ""), "/repo", ConfigFile{Path: "/repo/config/agents.json"}, ""},
		{"CONFIG_FILE empty", env("CONFIG_FILE", ""), "",
			ConfigFile{}, "CONFIG_FILE is set but empty; name the agents config, or unset it for config/agents.json"},
		{"CONFIG_FILE empty in a workspace", env("CONFIG_FILE", "", "FLEET_WORKSPACE", "/ws"), "",
			ConfigFile{}, "CONFIG_FILE is set but empty; name the agents config, or unset it for /ws/config/agents.json"},
	} {
		got, err := FindConfig(c.env, c.dir)
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr || !errors.Is(err, ErrConfigEnvEmpty) {
				t.Errorf("%s: FindConfig = %+v, %v; want the error %q", c.name, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: FindConfig = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestSwarmConfig(t *testing.T) {
	for _, c := range []struct {
		env  func(string) (string, bool)
		want ConfigFile
	}{
		{env(), ConfigFile{Path: "/sw/agents.json"}},
		{env("SWARM_AGENTS", ""), ConfigFile{Path: "/sw/agents.json"}},
		{env("SWARM_AGENTS", "/p.json", "CONFIG_FILE", "/c.json"), ConfigFile{Path: "/p.json", Origin: FromEnv, Env: "SWARM_AGENTS"}},
		{env("CONFIG_FILE", "/c.json", "FLEET_WORKSPACE", "/ws"), ConfigFile{Path: "/sw/agents.json"}},
	} {
		if got := SwarmConfig(c.env, "/sw"); got != c.want {
			t.Errorf("SwarmConfig = %+v, want %+v", got, c.want)
		}
	}
}

// What a missing file means depends on who named it; a file that is there is read, whoever did.
func TestConfigFileLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(good, []byte(`{"aider": {"command": "aider"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope.json")
	for _, c := range []struct {
		f          ConfigFile
		wantErr    string // "" for none
		wantNoConf bool
	}{
		{ConfigFile{Path: good, Origin: FromEnv, Env: ConfigEnv}, "", false},
		{ConfigFile{Path: good, Origin: FromWorkspace}, "", false},
		{ConfigFile{Path: good}, "", false},
		{ConfigFile{Path: missing, Origin: FromEnv, Env: ConfigEnv}, "no such file; CONFIG_FILE names it: point it at the agents config, or unset it", true},
		{ConfigFile{Path: missing, Origin: FromEnv, Env: SwarmConfigEnv}, "no such file; SWARM_AGENTS names it", true},
		{ConfigFile{Path: missing, Origin: FromWorkspace}, "no such file; the workspace's agents config is needed, as dispatch.sh needed it: create it, or set CONFIG_FILE", true},
		{ConfigFile{Path: missing}, "agents config " + missing + ": no such file", true},
	} {
		cfg, err := c.f.Load()
		switch {
		case c.wantErr == "" && (err != nil || cfg.Agents["aider"] == nil):
			t.Errorf("Load(%+v) = %v, %v; want the file's config", c.f, cfg, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("Load(%+v) = %v; want an error holding %q", c.f, err, c.wantErr)
		case c.wantErr != "" && errors.Is(err, ErrNoConfig) != c.wantNoConf:
			t.Errorf("Load(%+v) = %v; errors.Is(ErrNoConfig) = %v", c.f, err, !c.wantNoConf)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	// No file in dir: the built-in agents.
	cfg, err := LoadConfig(env(), dir)
	if err != nil || cfg.Path != "" || cfg.Agents["claude"] == nil || cfg.Agents["codex"] == nil {
		t.Fatalf("LoadConfig(no file) = %+v, %v; want the built-in claude and codex", cfg, err)
	}
	// A workspace without one: an error, never the built-in agents.
	if cfg, err := LoadConfig(env("FLEET_WORKSPACE", dir), ""); err == nil || !errors.Is(err, ErrNoConfig) {
		t.Errorf("LoadConfig(workspace without a config) = %+v, %v; want an error", cfg, err)
	}
	// dir's file.
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config", "agents.json")
	if err := os.WriteFile(path, []byte(`{"mine": {"command": "mine"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := LoadConfig(env(), dir); err != nil || cfg.Path != path || cfg.Agents["mine"] == nil {
		t.Errorf("LoadConfig(dir) = %+v, %v; want %s", cfg, err, path)
	}
	// A broken one is an error naming it, never the built-in agents.
	if err := os.WriteFile(path, []byte(`{"mine": `), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := LoadConfig(env(), dir); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadConfig(broken) = %+v, %v; want an error naming %s", cfg, err, path)
	}
	if _, err := LoadConfig(env("CONFIG_FILE", ""), dir); !errors.Is(err, ErrConfigEnvEmpty) {
		t.Errorf("LoadConfig(CONFIG_FILE empty) = %v, want ErrConfigEnvEmpty", err)
	}
}

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		in          string
		name, model string
		err         bool
	}{
		{"claude", "claude", "", false},
		{"claude:sonnet", "claude", "sonnet", false},
		{"codex:gpt-5.3-codex", "codex", "gpt-5.3-codex", false},
		{"ollama:llama3:70b", "ollama", "llama3:70b", false}, // the first colon splits
		{"claude:", "", "", true},
		{":sonnet", "", "sonnet", false}, // no name: Config.Lookup refuses it by name
		{"", "", "", false},
	} {
		name, model, err := ParseSpec(c.in)
		if name != c.name || model != c.model || (err != nil) != c.err {
			t.Errorf("ParseSpec(%q) = %q, %q, %v; want %q, %q, error %v", c.in, name, model, err, c.name, c.model, c.err)
		}
		if c.err && (!errors.Is(err, ErrEmptyModel) || err.Error() != `empty model after the colon in "`+c.in+`"; give AGENT:MODEL or AGENT`) {
			t.Errorf("ParseSpec(%q) = %v, want ErrEmptyModel in dispatch's words", c.in, err)
		}
	}
}
