package agent

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Patterns are an agent's screen patterns, Go regular expressions tested one screen line at a
// time (trailing spaces removed), as swarm's ready detection did. In the config they are
// optional keys of an agent's entry:
//
//	"aider": {"command": "aider", "ready": ["^> ?$"], "busy": ["Waiting for"],
//	          "waiting": ["\\(Y\\)es/\\(N\\)o"], "dismiss": []}
//
// ready: the agent has started and takes input (spawn --ready-wait). busy: it is working.
// waiting: it asks the person something (a permission prompt). dismiss: a start-up screen
// that is not the agent yet (a theme or login choice), which --ready-wait answers with Enter,
// as the Python swarm did.
type Patterns struct {
	Ready   []string `json:"ready,omitempty"`
	Busy    []string `json:"busy,omitempty"`
	Waiting []string `json:"waiting,omitempty"`
	Dismiss []string `json:"dismiss,omitempty"`
}

// Empty reports whether p has no pattern at all.
func (p Patterns) Empty() bool {
	return len(p.Ready)+len(p.Busy)+len(p.Waiting)+len(p.Dismiss) == 0
}

// The Python swarm's ready patterns (wait_for_agent_ready), one list for every command. Its
// prompt patterns needed a space after the prompt, which tmux's capture had already trimmed,
// so a bare prompt never matched; here a prompt also matches at the end of its line.
var (
	claudeReady = []string{`bypass\s+permissions`, `permissions?\s+mode`, `shift\+tab\s+to\s+cycle`,
		`Claude\s+Code\s+v\d+`, `^>(\s|$)`, `❯(\s|$)`}
	openCodeReady = []string{`opencode\s+v\d+`, `tab\s+switch\s+agent`, `ctrl\+p\s+commands`}
	shellReady    = []string{`^\$(\s|$)`, `^>>>(\s|$)`}
	// Start-up screens the Python swarm pressed Enter on.
	claudeDismiss = []string{`Choose the text style`, `looks best with your terminal`, `Select login method`,
		`Paste code here`}
)

// Busy and waiting patterns are not the Python swarm's (it had none): they are what the agents'
// interfaces show. Claude Code: "✻ Thinking… (12s · esc to interrupt)" while it works, "Do you
// want to proceed?" with numbered choices when it asks. Codex: "Working (3s • esc to
// interrupt)", and "Allow command?" / "Would you like to run the following command?".
var (
	claudeBusy    = []string{`esc to interrupt`}
	claudeWaiting = []string{`Do you want to`, `Would you like to`, `^\s*❯\s*1\.\s`}
	codexReady    = []string{`OpenAI Codex`, `describe a task`, `⏎ send`, `^›(\s|$)`, `^▌(\s|$)`}
	codexBusy     = []string{`esc to interrupt`, `^\W*Working\b`}
	codexWaiting  = []string{`Allow command\?`, `Would you like to`, `Press Enter to confirm`}
	// A command-line program that asks: "Continue? [y/N]", "(y/n)".
	shellWaiting = []string{`\[[yY]/[nN]\]\s*:?$`, `\([yY]/[nN]\)\s*:?$`, `\(yes/no\)`, `Press Enter to`}
)

var (
	claudeScreen = Patterns{Ready: claudeReady, Busy: claudeBusy, Waiting: claudeWaiting, Dismiss: claudeDismiss}
	codexScreen  = Patterns{Ready: codexReady, Busy: codexBusy, Waiting: codexWaiting}
)

// Generic is the profile of a command no agent entry names: a shell or any program. Its ready
// patterns are the Python swarm's whole list (it used one list whatever the command was), so
// --ready-wait behaves as it did; busy and waiting are what the built-in agents and common
// command-line prompts show.
func Generic() *Profile {
	return &Profile{Name: GenericName, Command: "sh", Prompt: PromptStdin, Models: map[string]string{}, Terminal: true,
		Screen: Patterns{
			Ready:   concat(claudeReady, openCodeReady, shellReady),
			Busy:    concat(claudeBusy, codexBusy),
			Waiting: concat(claudeWaiting, codexWaiting, shellWaiting),
			Dismiss: claudeDismiss,
		}}
}

// GenericName is the name of the generic profile (Generic), which a config may override.
const GenericName = "shell"

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// ScreenProfile returns the profile whose screen patterns watch a command: the agent type
// named (swarm spawn --profile), else the one whose command is argv's program (by base name:
// "/usr/local/bin/claude" is claude), else the generic one. The config's entries come first;
// an entry without patterns takes the built-in patterns of its name. cfg may be nil.
func ScreenProfile(cfg *Config, name string, argv []string) (*Profile, error) {
	builtin := Builtin()
	builtin.Agents[GenericName] = Generic()
	var agents []map[string]*Profile
	if cfg != nil {
		agents = append(agents, cfg.Agents)
	}
	agents = append(agents, builtin.Agents)
	pick := func(p *Profile) *Profile {
		if p.Screen.Empty() {
			if b, ok := builtin.Agents[p.Name]; ok {
				q := *p
				q.Screen = b.Screen
				return &q
			}
		}
		return p
	}
	if name != "" {
		for _, m := range agents {
			if p, ok := m[name]; ok {
				return pick(p), nil
			}
		}
		known := map[string]bool{}
		var names []string
		for _, m := range agents {
			for n := range m {
				if !known[n] {
					known[n] = true
					names = append(names, n)
				}
			}
		}
		return nil, fmt.Errorf("unknown agent profile %q; known profiles: %s", name, sortedJoin(names))
	}
	if len(argv) > 0 {
		prog := filepath.Base(argv[0])
		for _, m := range agents {
			// Sorted, so that two entries with the same command always give the same one.
			for _, n := range sortedKeys(m) {
				if p := m[n]; filepath.Base(p.Command) == prog && n != GenericName {
					return pick(p), nil
				}
			}
		}
	}
	for _, m := range agents {
		if p, ok := m[GenericName]; ok {
			return pick(p), nil
		}
	}
	return Generic(), nil
}

// Compile compiles the patterns; an error names the list and the pattern.
func (p Patterns) Compile() (*Matcher, error) {
	m := &Matcher{}
	for _, l := range []struct {
		name string
		src  []string
		dst  *[]*regexp.Regexp
	}{{"ready", p.Ready, &m.ready}, {"busy", p.Busy, &m.busy}, {"waiting", p.Waiting, &m.waiting}, {"dismiss", p.Dismiss, &m.dismiss}} {
		for _, s := range l.src {
			re, err := regexp.Compile(s)
			if err != nil {
				return nil, fmt.Errorf("%s pattern %q: %v", l.name, s, err)
			}
			*l.dst = append(*l.dst, re)
		}
	}
	return m, nil
}

// Matcher is compiled Patterns.
type Matcher struct{ ready, busy, waiting, dismiss []*regexp.Regexp }

func anyLine(res []*regexp.Regexp, lines []string) bool {
	for _, l := range lines {
		for _, re := range res {
			if re.MatchString(l) {
				return true
			}
		}
	}
	return false
}

// Ready reports whether a line of the screen shows the agent ready for input.
func (m *Matcher) Ready(lines []string) bool { return anyLine(m.ready, lines) }

// Busy reports whether a line of the screen shows the agent at work.
func (m *Matcher) Busy(lines []string) bool { return anyLine(m.busy, lines) }

// Waiting reports whether a line of the screen shows the agent asking the person something.
func (m *Matcher) Waiting(lines []string) bool { return anyLine(m.waiting, lines) }

// Dismiss reports whether the screen is a start-up screen to answer with Enter.
func (m *Matcher) Dismiss(lines []string) bool { return anyLine(m.dismiss, lines) }

func sortedKeys(m map[string]*Profile) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedJoin(names []string) string {
	sort.Strings(names)
	return strings.Join(names, ", ")
}
