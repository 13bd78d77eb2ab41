package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/testenv"
)

// TestVerbHelpWithOperand: every verb of swarm (and of swarm heartbeat, swarm ralph) given an
// operand and --help, before or after it (before the command of spawn), prints its help and exits 0, as argparse did
// ("swarm kill w --help"; it was "No help topic for 'w'", exit 1).
func TestVerbHelpWithOperand(t *testing.T) {
	t.Setenv("SWARM_DIR", t.TempDir())
	testenv.VerbHelp(t, "swarm", newTool)
}

// TestRalphHelpManual: swarm ralph's help and its verbs' are the manual the Python swarm's were
// (the workflow, how to write a prompt, a quick reference; spawn's examples, usage limits,
// stepping in, watching; init's, run's and status's notes and examples), and every command line
// they show names a verb and flags that exist: the manual is true of this tool.
func TestRalphHelpManual(t *testing.T) {
	t.Setenv("SWARM_DIR", t.TempDir())
	help := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := newTool().Main(append([]string{"swarm"}, args...), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
			t.Fatalf("swarm %q = %d, stderr %q", args, code, errb.String())
		}
		return out.String()
	}
	// The section names and phrases mtomcal/swarm's own TestRalphHelpContent looks for
	// (scripts/pysuite.sh), beside ours: people and agents who learnt the Python tool's help
	// find its sections under the same names.
	texts := map[string][]string{
		"ralph": {"How to use it:", "swarm send NAME",
			"Ralph Wiggum pattern", "context windows", "Prompt Design Principles", "ONE task per iteration",
			"Quick Reference", "swarm ralph init", "swarm send"},
		"ralph spawn": {"Examples:", "Usage and rate limits:", "--heartbeat 4h --heartbeat-expire 24h", "Safety:",
			"--prompt-file PROMPT.md", "--max-iterations", "Intervention:", "swarm send", "Monitoring:", "swarm attach", "swarm logs"},
		"ralph init":   {"Examples:", "the command that runs its tests", "PROMPT.md", "customize"},
		"ralph run":    {"Examples:", "--no-run", "SIGTERM pauses", "monitoring loop"},
		"ralph status": {"Examples:", "swarm status NAME", "monitor_disconnected", "iteration"},
		"ralph list":   {"--format json"},
	}
	for verb, wants := range texts {
		text := help(append(strings.Fields(verb), "--help")...)
		for _, w := range wants {
			if !strings.Contains(text, w) {
				t.Errorf("swarm %s --help lacks %q", verb, w)
			}
		}
		checkCommandLines(t, verb, text)
	}
}

// checkCommandLines checks every command line the help text shows, a line that starts with
// "swarm " (a line ending in \ goes on on the next; commands joined by ; or && each): the verb
// exists, and each flag before the command's "--" or a comment is one of its flags.
func checkCommandLines(t *testing.T, verb, text string) {
	t.Helper()
	text = strings.ReplaceAll(text, "\\\n", " ")
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		for _, part := range strings.FieldsFunc(strings.ReplaceAll(line, "&&", ";"), func(r rune) bool { return r == ';' }) {
			if part = strings.TrimSpace(part); strings.HasPrefix(part, "swarm ") {
				lines = append(lines, part)
			}
		}
	}
	if len(lines) == 0 {
		t.Errorf("swarm %s --help shows no command line", verb)
	}
	for _, line := range lines {
		words := strings.Fields(line)[1:]
		cmds := newTool().Commands
		var c *cli.Command
		for len(words) > 0 {
			var next *cli.Command
			for _, x := range cmds {
				if x.Name == words[0] {
					next = x
				}
			}
			if next == nil {
				break
			}
			c, cmds, words = next, next.Commands, words[1:]
		}
		if c == nil {
			t.Errorf("swarm %s --help shows %q: no such verb", verb, line)
			continue
		}
		for _, w := range words {
			if w == "--" || w == "#" {
				break
			}
			if !strings.HasPrefix(w, "--") {
				continue
			}
			name := strings.TrimRight(strings.TrimPrefix(w, "--"), "',.:)")
			if name == "help" {
				continue
			}
			found := false
			for _, f := range c.Flags {
				for _, n := range f.Names() {
					found = found || n == name
				}
			}
			if !found {
				t.Errorf("swarm %s --help shows %q: swarm %s has no --%s", verb, strings.TrimSpace(line), c.Name, name)
			}
		}
	}
}

// TestSpawnSharedFlags: the flags that swarm spawn and a ralph loop's spawn share
// (cmd/internal/workerflags) read the same in both helps. They were copied, with different
// help texts (issue 28).
func TestSpawnSharedFlags(t *testing.T) {
	t.Setenv("SWARM_DIR", t.TempDir())
	help := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := newTool().Main(append([]string{"swarm"}, args...), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
			t.Fatalf("swarm %q = %d, stderr %q", args, code, errb.String())
		}
		return out.String()
	}
	spawn, loop := help("spawn", "--help"), help("ralph", "spawn", "--help")
	for _, name := range []string{"session", "tmux-socket", "branch", "worktree-dir", "tag", "env", "ready-wait", "ready-timeout",
		"profile", "heartbeat", "heartbeat-expire", "heartbeat-message"} {
		a, b := flagUsage(spawn, name), flagUsage(loop, name)
		if a == "" || a != b {
			t.Errorf("--%s: swarm spawn --help says %q, swarm ralph spawn --help %q; want one text", name, a, b)
		}
	}
}

// flagUsage is what help says of the flag --name, its name and placeholder ("--tag T [ --tag
// T ]" for a repeatable one) left out; "" when it has no such flag.
func flagUsage(help, name string) string {
	n := regexp.QuoteMeta(name)
	m := regexp.MustCompile(`(?m)^   --` + n + `(?: [A-Z=]+(?: \[ --` + n + ` [A-Z=]+ \])?)?  +(.*)$`).FindStringSubmatch(help)
	if m == nil {
		return ""
	}
	return m[1]
}
