package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func loadExample(t *testing.T) *Config {
	t.Helper()
	cfg, err := Load("../../../shared/compat/config-agents.example.json")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path == "" {
		t.Skip("compat example config not found")
	}
	return cfg
}

func TestExampleConfigCommandLines(t *testing.T) {
	cfg := loadExample(t)
	env := func(string) string { return "" }
	claude, _ := cfg.Lookup("claude")
	inv := claude.Invoke(claude.Model("", env), "do it", "", "")
	want := []string{"claude", "-p", "--dangerously-skip-permissions", "--model", "opus"}
	if !reflect.DeepEqual(inv.Argv, want) || !inv.Stdin {
		t.Errorf("claude = %q stdin=%v, want %q on stdin", inv.Argv, inv.Stdin, want)
	}
	codex, _ := cfg.Lookup("codex")
	inv = codex.Invoke(codex.Model("", env), "do it", "", "high")
	want = []string{"codex", "exec", "-m", "gpt-5.3-codex", "--yolo", "-c", `model_reasoning_effort="high"`}
	if !reflect.DeepEqual(inv.Argv, want) || !inv.Stdin {
		t.Errorf("codex = %q, want %q", inv.Argv, want)
	}
	if _, ok := cfg.Verify(filepath.Join(os.Getenv("HOME"), "oathkeeper")); !ok {
		t.Error("Verify({{HOME}}/oathkeeper) found no test_cmd")
	}
	if _, err := cfg.Lookup("aider"); err == nil {
		t.Error("Lookup(aider) in the example config = nil error")
	}
}

func TestModelResolution(t *testing.T) {
	p := &Profile{Name: "claude", DefaultModel: "opus", Models: map[string]string{"fast": "haiku-4"}}
	tests := []struct {
		suffix, env, want string
	}{
		{"", "", "opus"},
		{"", "sonnet", "sonnet"},
		{"fast", "sonnet", "haiku-4"},
		{"x-1", "", "x-1"},
	}
	for _, tt := range tests {
		got := p.Model(tt.suffix, func(k string) string {
			if k == "DISPATCH_CLAUDE_MODEL" {
				return tt.env
			}
			return ""
		})
		if got != tt.want {
			t.Errorf("Model(%q) with env %q = %q, want %q", tt.suffix, tt.env, got, tt.want)
		}
	}
}

func TestCustomAgentsAndPromptModes(t *testing.T) {
	cfg, err := Parse([]byte(`{
	  "aider": {"command": "aider", "flags": ["--yes-always"], "model_flag": "--model", "default_model": "gpt-4o",
	            "prompt": "file", "prompt_flag": "--message-file"},
	  "echo":  {"command": "/bin/echo", "prompt": "arg"},
	  "notes": "not an agent: no command",
	  "repos": {"/srv/app": {"test_cmd": "make test", "timeout": 60}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Names(); !reflect.DeepEqual(got, []string{"aider", "echo"}) {
		t.Errorf("Names = %q", got)
	}
	aider, _ := cfg.Lookup("aider")
	inv := aider.Invoke("gpt-4o", "p", "/state/prompts/bd-1.txt", "")
	if want := []string{"aider", "--yes-always", "--model", "gpt-4o", "--message-file", "/state/prompts/bd-1.txt"}; !reflect.DeepEqual(inv.Argv, want) || inv.Stdin || inv.PromptFile == "" {
		t.Errorf("aider = %+v, want argv %q with a prompt file", inv, want)
	}
	echo, _ := cfg.Lookup("echo")
	inv = echo.Invoke("", "it's $(dangerous)", "", "")
	if want := []string{"/bin/echo", "it's $(dangerous)"}; !reflect.DeepEqual(inv.Argv, want) {
		t.Errorf("echo = %q, want the prompt as one literal argument", inv.Argv)
	}
	if r, ok := cfg.Verify("/srv/app/"); !ok || r.TestCmd != "make test" || r.Timeout != 60 {
		t.Errorf("Verify(/srv/app/) = %+v, %v", r, ok)
	}
}

func TestLoadErrors(t *testing.T) {
	if cfg, err := Load(filepath.Join(t.TempDir(), "none.json")); err != nil || len(cfg.Agents) != 2 {
		t.Errorf("Load(missing) = %v, %v; want the built-in claude and codex", cfg, err)
	}
	bad := filepath.Join(t.TempDir(), "agents.json")
	os.WriteFile(bad, []byte(`{"claude": `), 0o644)
	if _, err := Load(bad); err == nil {
		t.Error("Load(truncated) = nil error")
	}
	os.WriteFile(bad, []byte(`{"a/b": {"command": "x"}}`), 0o644)
	if _, err := Load(bad); err == nil {
		t.Error("Load(agent named a/b) = nil error")
	}
}
