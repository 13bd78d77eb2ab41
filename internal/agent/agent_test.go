package agent

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func loadExample(t *testing.T) *Config {
	t.Helper()
	cfg, err := Load("../../../shared/compat/config-agents.example.json")
	if errors.Is(err, ErrNoConfig) {
		t.Skip("compat example config not found")
	}
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// gitDir returns a directory with a .git in it, as codex wants.
func gitDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestExampleConfigCommandLines(t *testing.T) {
	cfg := loadExample(t)
	env := func(string) string { return "" }
	repo := gitDir(t)
	claude, _ := cfg.Lookup("claude")
	inv := claude.Invoke(Call{Model: claude.Model("", env).Resolved, Prompt: "do it", Dir: repo})
	want := []string{"claude", "-p", "--dangerously-skip-permissions", "--model", "opus"}
	if !reflect.DeepEqual(inv.Argv, want) || !inv.Stdin {
		t.Errorf("claude = %q stdin=%v, want %q on stdin", inv.Argv, inv.Stdin, want)
	}
	codex, _ := cfg.Lookup("codex")
	inv = codex.Invoke(Call{Model: codex.Model("", env).Resolved, Prompt: "do it", Effort: "high", Dir: repo})
	want = []string{"codex", "exec", "-m", "gpt-5.3-codex", "--yolo", "-c", `model_reasoning_effort="high"`, "-"}
	if !reflect.DeepEqual(inv.Argv, want) || !inv.Stdin {
		t.Errorf("codex = %q, want %q", inv.Argv, want)
	}
	// The example's codex has the alias "default": codex:default runs gpt-5.3-codex.
	if m := codex.Model("default", env); m.Name != "default" || m.Resolved != "gpt-5.3-codex" {
		t.Errorf("codex.Model(default) = %+v, want default resolved to gpt-5.3-codex", m)
	}
	if _, ok := cfg.Verify(filepath.Join(os.Getenv("HOME"), "oathkeeper")); !ok {
		t.Error("Verify({{HOME}}/oathkeeper) found no test_cmd")
	}
	if _, err := cfg.Lookup("aider"); err == nil {
		t.Error("Lookup(aider) in the example config = nil error")
	}
}

func TestModel(t *testing.T) {
	p := &Profile{Name: "claude", DefaultModel: "opus", Models: map[string]string{"fast": "haiku-4", "opus": "claude-opus-4-6"}}
	tests := []struct {
		suffix, env string
		want        Model
	}{
		{"", "", Model{Name: "opus", Resolved: "claude-opus-4-6", FromConfig: true}},
		{"", "sonnet", Model{Name: "sonnet", Resolved: "sonnet"}},
		{"fast", "sonnet", Model{Name: "fast", Resolved: "haiku-4"}},
		{"", "fast", Model{Name: "fast", Resolved: "haiku-4"}},
		{"x-1", "", Model{Name: "x-1", Resolved: "x-1"}},
	}
	for _, tt := range tests {
		got := p.Model(tt.suffix, func(k string) string {
			if k == "DISPATCH_CLAUDE_MODEL" {
				return tt.env
			}
			return ""
		})
		if got != tt.want {
			t.Errorf("Model(%q) with DISPATCH_CLAUDE_MODEL=%q = %+v, want %+v", tt.suffix, tt.env, got, tt.want)
		}
	}
	none := &Profile{Name: "my-agent"}
	if got, want := none.Model("", func(string) string { return "" }), (Model{Name: DefaultModel}); got != want {
		t.Errorf("Model of an agent with no model = %+v, want %+v", got, want)
	}
}

func TestCodexOutsideGit(t *testing.T) {
	cfg, err := Parse([]byte(`{
	  "codex": {"command": "codex", "subcommand": "exec", "exec_mode": {"flags": ["exec", "--yolo"], "model_flag": "-m"}},
	  "codex-plain": {"command": "codex", "subcommand": "exec", "flags": ["--yolo"]},
	  "codex-told": {"command": "codex", "subcommand": "exec", "stdin_arg": "-", "outside_git_flag": "--skip-git-repo-check"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	off, err := Parse([]byte(`{"codex": {"command": "codex", "stdin_arg": "", "outside_git_flag": ""}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agents["codex-off"] = off.Agents["codex"] // an entry named codex that opts out
	repo, plain := gitDir(t), t.TempDir()
	tests := []struct {
		agent, dir string
		want       []string
	}{
		{"codex", repo, []string{"codex", "exec", "-m", "m", "--yolo", "-"}},
		{"codex", plain, []string{"codex", "exec", "-m", "m", "--yolo", "--skip-git-repo-check", "-"}},
		{"codex-plain", plain, []string{"codex", "exec", "--yolo"}},
		{"codex-told", plain, []string{"codex", "exec", "--skip-git-repo-check", "-"}},
		{"codex-off", plain, []string{"codex"}},
	}
	for _, tt := range tests {
		p, _ := cfg.Lookup(tt.agent)
		if got := p.Invoke(Call{Model: "m", Prompt: "p", Dir: tt.dir}).Argv; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s in %s = %q, want %q", tt.agent, filepath.Base(tt.dir), got, tt.want)
		}
	}
	// A worktree's .git is a file.
	wt := t.TempDir()
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: /elsewhere\n"), 0o644)
	p, _ := cfg.Lookup("codex")
	if got := p.Invoke(Call{Model: "m", Dir: wt}).Argv; got[len(got)-2] == codexOutsideGitFlag {
		t.Errorf("codex in a worktree = %q, want no %s", got, codexOutsideGitFlag)
	}
}

func TestMCPConfigOnlyWhenPresent(t *testing.T) {
	dir := t.TempDir()
	present := filepath.Join(dir, "mcp.json")
	os.WriteFile(present, []byte("{}"), 0o644)
	for _, tt := range []struct {
		path string
		want []string
	}{
		{present, []string{"claude", "-p", "--model", "opus", "--mcp-config", present}},
		{filepath.Join(dir, "absent.json"), []string{"claude", "-p", "--model", "opus"}},
		{dir, []string{"claude", "-p", "--model", "opus"}}, // a directory is not the file
	} {
		p := &Profile{Name: "claude", Command: "claude", Flags: []string{"-p"}, ModelFlag: "--model", MCPConfig: tt.path}
		if got := p.Invoke(Call{Model: "opus", Dir: dir}).Argv; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("mcp_config %s: %q, want %q", tt.path, got, tt.want)
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
	inv := aider.Invoke(Call{Model: "gpt-4o", Prompt: "p", PromptFile: "/state/prompts/bd-1.txt"})
	if want := []string{"aider", "--yes-always", "--model", "gpt-4o", "--message-file", "/state/prompts/bd-1.txt"}; !reflect.DeepEqual(inv.Argv, want) || inv.Stdin || inv.PromptFile == "" {
		t.Errorf("aider = %+v, want argv %q with a prompt file", inv, want)
	}
	echo, _ := cfg.Lookup("echo")
	inv = echo.Invoke(Call{Prompt: "it's $(dangerous)"})
	if want := []string{"/bin/echo", "it's $(dangerous)"}; !reflect.DeepEqual(inv.Argv, want) {
		t.Errorf("echo = %q, want the prompt as one literal argument", inv.Argv)
	}
	if r, ok := cfg.Verify("/srv/app/"); !ok || r.TestCmd != "make test" || r.Timeout != 60 {
		t.Errorf("Verify(/srv/app/) = %+v, %v", r, ok)
	}
}

func TestLoadErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.json")
	if _, err := Load(missing); !errors.Is(err, ErrNoConfig) {
		t.Errorf("Load(missing) = %v, want ErrNoConfig, never the built-in agents", err)
	}
	bad := filepath.Join(t.TempDir(), "agents.json")
	for _, doc := range []string{`{"claude": `, `[1, 2]`, `{"a/b": {"command": "x"}}`} {
		os.WriteFile(bad, []byte(doc), 0o644)
		if _, err := Load(bad); err == nil {
			t.Errorf("Load(%s) = nil error", doc)
		}
	}
}

func TestJSONOutput(t *testing.T) {
	claude, other := &Profile{Name: "claude"}, &Profile{Name: "codex"}
	tests := []struct {
		p    *Profile
		argv string
		want string
	}{
		{claude, "claude -p", "claude -p --output-format json"},
		{claude, "claude -p --output-format stream-json", "claude -p --output-format stream-json"},
		{claude, "claude -p --output-format=text", "claude -p --output-format=text"},
		{other, "codex exec", "codex exec"},
	}
	for _, tt := range tests {
		if got := strings.Join(tt.p.JSONOutput(strings.Fields(tt.argv)), " "); got != tt.want {
			t.Errorf("%s.JSONOutput(%q) = %q, want %q", tt.p.Name, tt.argv, got, tt.want)
		}
	}
}

// TestLoadFIFO (issue 17): a named pipe given as the agents config (CONFIG_FILE=some-fifo) is
// refused at once, in one line, instead of blocking until a writer comes, which never does.
func TestLoadFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "agents.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Load(a FIFO) = %v, want one line saying it is not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the reader, so the test ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("Load(a FIFO) still blocks after 10 s")
	}
}
