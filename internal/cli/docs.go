package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// The man pages and shell completions, generated from the command-line definitions themselves
// (a Tool's verbs and flags, an App's flags, and the help each prints), so that they cannot
// drift from the binaries: `TOOL __man` prints the tool's man page (roff, section 1),
// `TOOL __completion bash|zsh|fish` its completion script. The Makefile writes them into
// share/ at build time and `make install` installs them. The words are hidden, as
// `__supervise` is: no bead, verb or operand starts with "__".

const (
	// ManWord is the hidden first argument that prints the tool's man page.
	ManWord = "__man"
	// CompletionWord is the hidden first argument that prints a completion script.
	CompletionWord = "__completion"
)

// docs is what the man page and the completions say of a tool.
type docs struct {
	name, usage string
	help        string   // the tool's --help, as it prints it
	flags       []string // "--state-dir", "-q": the flags that may stand first
	verbs       []verbDocs
}

// verbDocs is one visible verb.
type verbDocs struct {
	name, usage, help string
	flags             []string
}

// docsRequest answers ManWord or CompletionWord as the first argument; handled is false for
// any other command line.
func docsRequest(d func() docs, args []string, w io.Writer) (handled bool, err error) {
	if len(args) == 0 || (args[0] != ManWord && args[0] != CompletionWord) {
		return false, nil
	}
	if args[0] == ManWord {
		if len(args) != 1 {
			return true, Usagef("%s takes no arguments", ManWord)
		}
		return true, writeMan(w, d())
	}
	if len(args) != 2 {
		return true, Usagef("%s needs one shell: bash, zsh or fish", CompletionWord)
	}
	switch args[1] {
	case "bash":
		return true, writeBash(w, d())
	case "zsh":
		return true, writeZsh(w, d())
	case "fish":
		return true, writeFish(w, d())
	}
	return true, Usagef("%s %q: the shells are bash, zsh and fish", CompletionWord, args[1])
}

// flagNames are the visible flags' names as typed: "-q", "--quiet".
func flagNames(flags []ucli.Flag) []string {
	var out []string
	for _, f := range flags {
		if vf, ok := f.(ucli.VisibleFlag); ok && !vf.IsVisible() {
			continue
		}
		for _, n := range f.Names() {
			if len(n) == 1 {
				out = append(out, "-"+n)
			} else {
				out = append(out, "--"+n)
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// appDocs are the docs of a tool without verbs (validate-state, analyze-runs).
func appDocs(app *ucli.App) docs {
	var help bytes.Buffer
	w := app.Writer
	app.Writer = &help
	app.RunContext(context.Background(), []string{app.Name, "--help"})
	app.Writer = w
	return docs{name: app.Name, usage: app.Usage, help: help.String(), flags: flagNames(append(app.Flags, ucli.HelpFlag))}
}

// toolDocs are the docs of a Tool: its help, and each visible verb's.
func (t *Tool) docs() docs {
	var help bytes.Buffer
	if t.Usage != nil {
		t.Usage(&help)
	} else {
		listUsage(&help, t.Name, t.Commands)
	}
	d := docs{name: t.Name, help: help.String(), flags: flagNames(append(slices.Clip(t.Flags), ucli.HelpFlag))}
	if first, _, ok := strings.Cut(strings.TrimSpace(help.String()), "\n"); ok {
		if _, u, ok := strings.Cut(first, " - "); ok {
			d.usage = u
		}
	}
	for _, c := range t.Commands {
		if c.Hidden {
			continue
		}
		var vh bytes.Buffer
		s := Streams{Out: &vh, Err: &vh}
		path := t.Name + " " + c.Name
		switch {
		case c.Help != "":
			vh.WriteString(c.Help)
		case c.Action != nil:
			Run(context.Background(), c.App(path, s), []string{path, "--help"})
		case len(c.Commands) > 0 && c.CommandsUsage != nil:
			c.CommandsUsage(&vh)
		case len(c.Commands) > 0:
			listUsage(&vh, path, c.Commands)
		default:
			fmt.Fprintf(&vh, "%s\n", c.Usage)
		}
		flags := flagNames(append(slices.Clip(c.Flags), ucli.HelpFlag))
		for _, sub := range c.Commands {
			if !sub.Hidden {
				flags = append(flags, sub.Name) // "heartbeat start": the verb's own verbs
			}
		}
		d.verbs = append(d.verbs, verbDocs{name: c.Name, usage: c.Usage, help: vh.String(), flags: flags})
	}
	return d
}

// roff escapes text for a man page's preformatted block: backslashes, and a line starting with
// a dot or an apostrophe, which roff would read as a request.
func roff(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		line = strings.ReplaceAll(line, `\`, `\e`)
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			line = `\&` + line
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func writeMan(w io.Writer, d docs) error {
	var b strings.Builder
	fmt.Fprintf(&b, ".\\\" %s(1), generated from its command line by '%s %s'; do not edit.\n", d.name, d.name, ManWord)
	// No date: the page is the same bytes for the same version (reproducible releases).
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"%s %s\" \"agent-fleet toolkit\"\n", strings.ToUpper(d.name), d.name, Version())
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", d.name, roffLine(d.usage))
	fmt.Fprintf(&b, ".SH DESCRIPTION\nWhat \\fB%s \\-\\-help\\fR prints:\n.PP\n.nf\n%s.fi\n", d.name, roff(d.help))
	if len(d.verbs) > 0 {
		b.WriteString(".SH VERBS\n")
		for _, v := range d.verbs {
			fmt.Fprintf(&b, ".SS %s %s\n%s\n.PP\n.nf\n%s.fi\n", d.name, v.name, roffLine(v.usage), roff(v.help))
		}
	}
	b.WriteString(".SH SEE ALSO\nThe toolkit's docs/ directory: docs/" + d.name + ".md.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// roffLine escapes one line of running text.
func roffLine(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// fnName is a tool's name as a shell function's: "validate-state" → "validate_state".
func fnName(name string) string { return "_fleet_" + strings.ReplaceAll(name, "-", "_") }

// shellWords quotes a list of words for a single-quoted shell string (they hold no quote).
func shellWords(words []string) string {
	var out []string
	for _, w := range words {
		if !strings.ContainsAny(w, "'\\") {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

func verbNames(d docs) []string {
	var out []string
	for _, v := range d.verbs {
		out = append(out, v.name)
	}
	return out
}

func writeBash(w io.Writer, d docs) error {
	var b strings.Builder
	fn := fnName(d.name)
	fmt.Fprintf(&b, "# bash completion for %s, generated from its command line by '%s %s bash'.\n", d.name, d.name, CompletionWord)
	fmt.Fprintf(&b, "%s() {\n", fn)
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} verb= i words\n")
	b.WriteString("  for ((i = 1; i < COMP_CWORD; i++)); do\n")
	b.WriteString("    case ${COMP_WORDS[i]} in -*) ;; *) verb=${COMP_WORDS[i]}; break ;; esac\n")
	b.WriteString("  done\n")
	b.WriteString("  case $verb in\n")
	for _, v := range d.verbs {
		fmt.Fprintf(&b, "    %s) words='%s' ;;\n", v.name, shellWords(v.flags))
	}
	fmt.Fprintf(&b, "    '') words='%s' ;;\n", shellWords(append(verbNames(d), d.flags...)))
	fmt.Fprintf(&b, "    *) words='%s' ;;\n", shellWords(d.flags))
	b.WriteString("  esac\n")
	b.WriteString("  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n")
	b.WriteString("}\n")
	fmt.Fprintf(&b, "complete -o default -F %s %s\n", fn, d.name)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeZsh(w io.Writer, d docs) error {
	var b strings.Builder
	fn := "_" + strings.ReplaceAll(d.name, "-", "_")
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s, generated from its command line by '%s %s zsh'.\n", d.name, d.name, d.name, CompletionWord)
	fmt.Fprintf(&b, "%s() {\n", fn)
	b.WriteString("  local verb= w\n  local -a candidates\n")
	b.WriteString("  for w in ${words[2,CURRENT-1]}; do\n    [[ $w != -* ]] && { verb=$w; break }\n  done\n")
	b.WriteString("  case $verb in\n")
	for _, v := range d.verbs {
		fmt.Fprintf(&b, "    %s) candidates=(%s) ;;\n", v.name, shellWords(v.flags))
	}
	fmt.Fprintf(&b, "    '') candidates=(%s) ;;\n", shellWords(append(verbNames(d), d.flags...)))
	fmt.Fprintf(&b, "    *) candidates=(%s) ;;\n", shellWords(d.flags))
	b.WriteString("  esac\n")
	b.WriteString("  compadd -- $candidates\n  _files\n}\n")
	fmt.Fprintf(&b, "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n  %s \"$@\"\nelse\n  compdef %s %s\nfi\n", fn, fn, d.name)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeFish(w io.Writer, d docs) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# fish completion for %s, generated from its command line by '%s %s fish'.\n", d.name, d.name, CompletionWord)
	verbs := strings.Join(verbNames(d), " ")
	noVerb := "not __fish_seen_subcommand_from " + verbs
	if verbs == "" {
		noVerb = "true"
	}
	for _, v := range d.verbs {
		fmt.Fprintf(&b, "complete -c %s -f -n '%s' -a %s -d %s\n", d.name, noVerb, v.name, fishQuote(v.usage))
	}
	flag := func(cond, f string) {
		if long, ok := strings.CutPrefix(f, "--"); ok {
			fmt.Fprintf(&b, "complete -c %s -n '%s' -l %s\n", d.name, cond, long)
		} else if short, ok := strings.CutPrefix(f, "-"); ok {
			fmt.Fprintf(&b, "complete -c %s -n '%s' -s %s\n", d.name, cond, short)
		} else {
			fmt.Fprintf(&b, "complete -c %s -f -n '%s' -a %s\n", d.name, cond, f)
		}
	}
	for _, f := range d.flags {
		flag(noVerb, f)
	}
	for _, v := range d.verbs {
		for _, f := range v.flags {
			flag("__fish_seen_subcommand_from "+v.name, f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fishQuote single-quotes s for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
