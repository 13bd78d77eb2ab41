package agent

import (
	"strings"
	"testing"
)

func TestScreenProfile(t *testing.T) {
	cfg, err := Parse([]byte(`{"claude": {"command": "/opt/bin/claude"},
		"aider": {"command": "aider", "ready": ["^> $"], "busy": ["Waiting"]},
		"shell": {"command": "sh", "ready": ["^mine\\$"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg     *Config
		name    string
		argv    []string
		want    string
		readyOf string // a screen line its ready patterns must match
	}{
		{nil, "", []string{"/usr/local/bin/claude", "--x"}, "claude", "Claude Code v2.1.0"},
		{nil, "", []string{"codex"}, "codex", ">_ OpenAI Codex (v0.46.0)"},
		{nil, "", []string{"bash"}, GenericName, "$"},
		{nil, "", []string{"python3"}, GenericName, ">>>"},
		{nil, "", nil, GenericName, "opencode v1.0"},
		{nil, "codex", []string{"bash"}, "codex", "To get started, describe a task"},
		// The config's entries first; one without patterns takes its name's built-in ones.
		{cfg, "", []string{"claude"}, "claude", "bypass permissions on"},
		{cfg, "", []string{"aider", "--yes"}, "aider", "> "},
		{cfg, "", []string{"bash"}, GenericName, "mine$"},
	} {
		p, err := ScreenProfile(c.cfg, c.name, c.argv)
		if err != nil {
			t.Fatalf("ScreenProfile(%q, %q) = %v", c.name, c.argv, err)
		}
		if p.Name != c.want {
			t.Errorf("ScreenProfile(%q, %q) = %s, want %s", c.name, c.argv, p.Name, c.want)
			continue
		}
		m, err := p.Screen.Compile()
		if err != nil {
			t.Fatalf("%s's patterns: %v", p.Name, err)
		}
		if !m.Ready([]string{"other", c.readyOf}) {
			t.Errorf("%s: Ready(%q) = false", p.Name, c.readyOf)
		}
	}
	if _, err := ScreenProfile(cfg, "nope", nil); err == nil || !strings.Contains(err.Error(), "aider, claude, codex, shell") {
		t.Errorf("ScreenProfile(nope) = %v, want the known profiles named", err)
	}
}

func TestGenericPatterns(t *testing.T) {
	m, err := Generic().Screen.Compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line                    string
		ready, busy, wait, dism bool
	}{
		// The Python swarm's prompt patterns needed text after the prompt; a bare one matches too.
		{line: ">", ready: true},
		{line: "> fix the bug", ready: true},
		{line: "❯", ready: true},
		{line: "$", ready: true},
		{line: "a > b"},
		{line: "Claude Code v2.1.41", ready: true},
		{line: "✻ Thinking… (3s · esc to interrupt)", busy: true},
		{line: "• Working (12s • esc to interrupt)", busy: true},
		{line: "Continue? [y/N]", wait: true},
		{line: "Overwrite? (y/n)", wait: true},
		{line: "Overwrite? (y/n) y"},
		{line: " Do you want to proceed?", wait: true},
		{line: "Choose the text style that looks best with your terminal", dism: true},
	} {
		l := []string{c.line}
		if got := [4]bool{m.Ready(l), m.Busy(l), m.Waiting(l), m.Dismiss(l)}; got != [4]bool{c.ready, c.busy, c.wait, c.dism} {
			t.Errorf("%q: ready, busy, waiting, dismiss = %v, want %v", c.line, got, [4]bool{c.ready, c.busy, c.wait, c.dism})
		}
	}
}

func TestParseRefusesBadPatterns(t *testing.T) {
	_, err := Parse([]byte(`{"x": {"command": "x", "waiting": ["a("]}}`))
	if err == nil || !strings.Contains(err.Error(), `agent "x": waiting pattern "a("`) {
		t.Errorf("Parse(bad pattern) = %v, want an error naming the agent and the pattern", err)
	}
}
