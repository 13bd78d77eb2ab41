package cli

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// The man pages and shell completions, generated from the command-line definitions themselves
// (a Tool's verbs and flags, an App's flags, the EnumFlags' choices) and the tool's Manual, so
// that they cannot drift from the binaries: `TOOL __man` prints the tool's man page (roff,
// section 1), `TOOL __completion bash|zsh|fish` its completion script (complete.go), and
// `TOOL __complete KIND` the names of one kind that exist, which the scripts ask for at TAB
// time. The Makefile writes the pages and scripts into share/ at build time and `make install`
// installs them. The words are hidden, as `__supervise` is: no bead, verb or operand starts
// with "__".

const (
	// ManWord is the hidden first argument that prints the tool's man page.
	ManWord = "__man"
	// CompletionWord is the hidden first argument that prints a completion script.
	CompletionWord = "__completion"
)

// docs is what the man page and the completions say of a tool.
type docs struct {
	name, usage string
	synopsis    []string    // the forms of the command line, one a line
	description string      // prose, paragraphs separated by a blank line
	epilog      string      // what the help says after the options, as written
	flags       []ucli.Flag // the flags that may stand first (before a verb)
	verbs       []*verbDocs
	manual      Manual
}

// verbDocs is one visible verb, and its own verbs ("heartbeat start").
type verbDocs struct {
	path                       string // "kill", "heartbeat start": the words after the tool's name
	usage, description, epilog string
	synopsis                   []string
	help                       string // a verb's hand-written help (Command.Help), as written
	flags                      []ucli.Flag
	operand                    string // the kind of name its first operand is (Command.Operand)
	verbs                      []*verbDocs
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

// visibleFlags are flags less the hidden ones, with --help.
func visibleFlags(flags []ucli.Flag) []ucli.Flag {
	var out []ucli.Flag
	for _, f := range append(slices.Clip(flags), ucli.HelpFlag) {
		if vf, ok := f.(ucli.VisibleFlag); ok && !vf.IsVisible() {
			continue
		}
		out = append(out, f)
	}
	return out
}

// typed are a flag's names as typed: "-q", "--quiet".
func typed(f ucli.Flag) []string {
	var out []string
	for _, n := range f.Names() {
		if len(n) == 1 {
			out = append(out, "-"+n)
		} else {
			out = append(out, "--"+n)
		}
	}
	return out
}

// takesValueFlag says whether f takes a value (all but boolean flags, as Interspersed has it).
func takesValueFlag(f ucli.Flag) bool {
	_, isBool := f.(*ucli.BoolFlag)
	return !isBool
}

// lines splits a synopsis into its forms.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// appDocs are the docs of a tool without verbs (validate-state, analyze-runs).
func appDocs(app *ucli.App) docs {
	d := docs{name: app.Name, usage: app.Usage, synopsis: lines(app.UsageText), description: app.Description,
		flags: visibleFlags(app.Flags)}
	if m, ok := app.Metadata["manual"].(Manual); ok {
		d.manual = m
	}
	if e, ok := app.Metadata["epilog"].(string); ok {
		d.epilog = e
	}
	if len(d.synopsis) == 0 {
		d.synopsis = []string{app.Name + " [options]"}
	}
	return d
}

// toolDocs are the docs of a Tool: its Manual, its flags, and each visible verb's.
func (t *Tool) docs() docs {
	var help bytes.Buffer
	if t.Usage != nil {
		t.Usage(&help)
	} else {
		listUsage(&help, t.Name, t.Commands)
	}
	d := docs{name: t.Name, flags: visibleFlags(t.Flags), manual: t.Manual}
	if first, _, ok := strings.Cut(strings.TrimSpace(help.String()), "\n"); ok {
		if _, u, ok := strings.Cut(first, " - "); ok {
			d.usage = u
		}
	}
	d.verbs = verbsDocs(t.Name, "", t.Commands)
	d.synopsis = slices.Clone(t.Manual.Synopsis)
	for _, v := range d.verbs {
		d.synopsis = append(d.synopsis, v.synopsis...)
	}
	return d
}

// verbsDocs are the docs of the visible verbs among cmds, below the path parent ("" for the
// tool's own verbs).
func verbsDocs(tool, parent string, cmds []*Command) []*verbDocs {
	var out []*verbDocs
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		path := strings.TrimSpace(parent + " " + c.Name)
		v := &verbDocs{path: path, usage: c.Usage, description: c.Description, epilog: c.Epilog, help: c.Help,
			synopsis: lines(c.UsageText), flags: visibleFlags(c.Flags), operand: c.Operand}
		v.verbs = verbsDocs(tool, path, c.Commands)
		if len(v.synopsis) == 0 && len(v.verbs) > 0 {
			for _, sub := range v.verbs {
				v.synopsis = append(v.synopsis, sub.synopsis...)
			}
		}
		if len(v.synopsis) == 0 {
			v.synopsis = []string{tool + " " + path + " [options]"}
		}
		out = append(out, v)
	}
	return out
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

// roffLine escapes one line of running text.
func roffLine(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// roffParagraphs is prose: each paragraph (separated by a blank line) one .PP, its lines joined.
func roffParagraphs(text string) string {
	var b strings.Builder
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			fmt.Fprintf(&b, ".PP\n%s\n", roffLine(strings.Join(strings.Fields(p), " ")))
		}
	}
	return b.String()
}

func writeMan(w io.Writer, d docs) error {
	var b strings.Builder
	fmt.Fprintf(&b, ".\\\" %s(1), generated from its command line by '%s %s'; do not edit.\n", d.name, d.name, ManWord)
	// No date: the page is the same bytes for the same version (reproducible releases).
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"%s %s\" \"agent-fleet toolkit\"\n", strings.ToUpper(d.name), d.name, Version())
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", d.name, roffLine(d.usage))
	manSynopsis(&b, d)
	manDescription(&b, d)
	manOptions(&b, d)
	manExitStatus(&b, d)
	manEnvironment(&b, d)
	manList(&b, "FILES", d.manual.Files, "It keeps no files of its own.")
	manExamples(&b, d)
	b.WriteString(".SH SEE ALSO\n")
	var others []string
	for _, t := range []string{"dispatch", "validate-state", "analyze-runs", "swarm", "ralph"} {
		if t != d.name {
			others = append(others, `\fB`+roffLine(t)+`\fR(1)`)
		}
	}
	fmt.Fprintf(&b, "%s; the toolkit's docs/%s.md.\n", strings.Join(others, ", "), roffLine(d.name))
	_, err := io.WriteString(w, b.String())
	return err
}

func manSynopsis(b *strings.Builder, d docs) {
	b.WriteString(".SH SYNOPSIS\n.nf\n")
	for _, s := range d.synopsis {
		if rest, ok := strings.CutPrefix(s, d.name); ok {
			fmt.Fprintf(b, "\\fB%s\\fR%s\n", roffLine(d.name), roffLine(rest))
		} else {
			fmt.Fprintf(b, "%s\n", roffLine(s))
		}
	}
	b.WriteString(".fi\n")
}

func manDescription(b *strings.Builder, d docs) {
	b.WriteString(".SH DESCRIPTION\n")
	fmt.Fprintf(b, "\\fB%s\\fR: %s.\n", roffLine(d.name), roffLine(d.usage))
	b.WriteString(roffParagraphs(d.manual.Description))
	if d.manual.Description == "" {
		b.WriteString(roffParagraphs(d.description))
	}
	if strings.TrimSpace(d.epilog) != "" {
		fmt.Fprintf(b, ".PP\n.nf\n%s.fi\n", roff(d.epilog))
	}
	if len(d.verbs) > 0 {
		b.WriteString(".PP\nThe verbs (each is described under OPTIONS; \\fB" + roffLine(d.name) + " VERB \\-\\-help\\fR prints its help):\n")
		for _, v := range d.verbs {
			fmt.Fprintf(b, ".TP\n.B %s\n%s\n", roffLine(v.path), roffLine(v.usage))
		}
	}
}

func manOptions(b *strings.Builder, d docs) {
	b.WriteString(".SH OPTIONS\n")
	b.WriteString(".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nprint the help and exit (after a verb: the verb's)\n")
	if len(d.verbs) > 0 && len(d.flags) > 1 {
		b.WriteString(".PP\nThe tool's own flags, which may also stand before a verb:\n")
	}
	manFlags(b, d.flags)
	var verb func(v *verbDocs)
	verb = func(v *verbDocs) {
		fmt.Fprintf(b, ".SS %s %s\n%s.\n", roffLine(d.name), roffLine(v.path), roffLine(v.usage))
		b.WriteString(".PP\n.nf\n")
		for _, s := range v.synopsis {
			fmt.Fprintf(b, "%s\n", roffLine(s))
		}
		b.WriteString(".fi\n")
		b.WriteString(roffParagraphs(v.description))
		if v.help != "" {
			fmt.Fprintf(b, ".PP\n.nf\n%s.fi\n", roff(v.help))
		} else if strings.TrimSpace(v.epilog) != "" {
			fmt.Fprintf(b, ".PP\n.nf\n%s.fi\n", roff(v.epilog))
		}
		if len(v.verbs) == 0 {
			manFlags(b, v.flags)
		}
		for _, sub := range v.verbs {
			verb(sub)
		}
	}
	for _, v := range d.verbs {
		verb(v)
	}
}

// manFlags lists flags: names and value, then what the flag does, its choices, its default
// and its environment variable.
func manFlags(b *strings.Builder, flags []ucli.Flag) {
	for _, f := range flags {
		if f == ucli.HelpFlag {
			continue // said once, at the top of OPTIONS
		}
		df, _ := f.(ucli.DocGenerationFlag)
		usage := ""
		if df != nil {
			usage = df.GetUsage()
		}
		placeholder, usage := flagPlaceholder(usage)
		var names []string
		for _, n := range typed(f) {
			names = append(names, `\fB`+roffLine(n)+`\fR`)
		}
		head := strings.Join(names, ", ")
		if takesValueFlag(f) {
			head += ` \fI` + roffLine(placeholder) + `\fR`
		}
		text := usage
		if choices := flagChoices(f); len(choices) > 0 {
			text += "; one of: " + strings.Join(choices, ", ")
		}
		if df != nil && takesValueFlag(f) {
			if def := df.GetDefaultText(); def != "" && def != `""` {
				text += " (default: " + def + ")"
			}
			if env := df.GetEnvVars(); len(env) > 0 {
				text += " (environment: " + strings.Join(env, ", ") + ")"
			}
		}
		fmt.Fprintf(b, ".TP\n%s\n%s\n", head, roffLine(text))
	}
}

// flagPlaceholder is the name of a flag's value, as urfave/cli finds it: the word between
// backquotes in its usage (VALUE when there is none), and the usage without the backquotes.
func flagPlaceholder(usage string) (name, rest string) {
	if i := strings.IndexByte(usage, '`'); i >= 0 {
		if j := strings.IndexByte(usage[i+1:], '`'); j >= 0 {
			name = usage[i+1 : i+1+j]
			return name, usage[:i] + name + usage[i+1+j+1:]
		}
	}
	return "VALUE", usage
}

func manExitStatus(b *strings.Builder, d docs) {
	b.WriteString(".SH EXIT STATUS\n")
	codes := d.manual.ExitStatus
	if len(codes) == 0 {
		codes = defaultExitCodes
	}
	for _, c := range codes {
		fmt.Fprintf(b, ".TP\n.B %d\n%s\n", c.Code, roffLine(c.Meaning))
	}
}

// manEnvironment is the Manual's variables, then the flags' that it does not name.
func manEnvironment(b *strings.Builder, d docs) {
	env := slices.Clone(d.manual.Environment)
	named := func(name string) bool {
		return slices.ContainsFunc(env, func(e Entry) bool { return e.Name == name })
	}
	addFlags := func(flags []ucli.Flag) {
		for _, f := range flags {
			df, ok := f.(ucli.DocGenerationFlag)
			if !ok {
				continue
			}
			for _, v := range df.GetEnvVars() {
				if !named(v) {
					env = append(env, Entry{v, "the default of " + typed(f)[0]})
				}
			}
		}
	}
	addFlags(d.flags)
	var walk func([]*verbDocs)
	walk = func(vs []*verbDocs) {
		for _, v := range vs {
			addFlags(v.flags)
			walk(v.verbs)
		}
	}
	walk(d.verbs)
	manList(b, "ENVIRONMENT", env, "It reads no environment variables of its own.")
}

func manList(b *strings.Builder, section string, entries []Entry, none string) {
	fmt.Fprintf(b, ".SH %s\n", section)
	if len(entries) == 0 {
		fmt.Fprintf(b, "%s\n", none)
	}
	for _, e := range entries {
		fmt.Fprintf(b, ".TP\n.B %s\n%s\n", roffLine(e.Name), roffLine(e.Meaning))
	}
}

func manExamples(b *strings.Builder, d docs) {
	b.WriteString(".SH EXAMPLES\n")
	if len(d.manual.Examples) == 0 {
		fmt.Fprintf(b, "See docs/%s.md.\n", roffLine(d.name))
	}
	for _, e := range d.manual.Examples {
		fmt.Fprintf(b, ".PP\n%s\n.PP\n.RS 4\n.nf\n%s.fi\n.RE\n", roffLine(e.Meaning), roff(e.Command))
	}
}
