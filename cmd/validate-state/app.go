package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/agentfleet/fleet/cmd/internal/dispatchenv"
	"github.com/agentfleet/fleet/internal/audit"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/schema"
	ucli "github.com/urfave/cli/v2"
)

const tool = "validate-state"

// memoryLimit is the Go runtime's soft memory limit unless GOMEMLIMIT sets one: near it the
// garbage collector works harder, so the peak RSS follows the live heap, which the audit's
// budget bounds (audit.MemoryBudget and one file's check), rather than twice that.
const memoryLimit = 192 << 20

// formats are --format's values.
var formats = []string{"text", "json", "github", "junit", "sarif"}

// options are validate-state's flags, each written into its field by the flag (AddFlags), and
// its operands.
type options struct {
	runs, results       bool
	runsPath, resPath   ucli.StringSlice // --runs PATH and --results PATH (optionalValues)
	all, fix, dryRun    bool
	kind, format        string
	json                bool // --format json
	quiet               bool
	stateDir, schemaDir string
	paths               []string
}

// AddFlags appends validate-state's flags, each writing into o, to flags.
func (o *options) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.BoolFlag{Name: "runs", Destination: &o.runs, Usage: "check run records: PATH (a file or directory) or the state directory's runs/"},
		&ucli.BoolFlag{Name: "results", Destination: &o.results, Usage: "check result records: PATH (a file or directory) or the state directory's results/"},
		&ucli.StringSliceFlag{Name: "runs-path", Destination: &o.runsPath, Hidden: true},
		&ucli.StringSliceFlag{Name: "results-path", Destination: &o.resPath, Hidden: true},
		&ucli.BoolFlag{Name: "all", Destination: &o.all, Usage: "check both runs/ and results/ of the state directory"},
		&ucli.BoolFlag{Name: "fix", Destination: &o.fix, Usage: "migrate legacy run and result records to full schema-v1 records (writes <file>.bak first)"},
		&ucli.BoolFlag{Name: "dry-run", Destination: &o.dryRun, Usage: "with --fix: print the changes, write nothing"},
		&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "kind", Destination: &o.kind, Usage: "the kind of the files given as PATH (`KIND`)"}, Choices: audit.Kinds},
		&ucli.BoolFlag{Name: "json", Destination: &o.json, Usage: "print one JSON document on stdout (same as --format json)"},
		&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "format", Value: "text", Destination: &o.format,
			Usage: "text, json, github (workflow annotations), junit (JUnit XML) or sarif (SARIF 2.1.0)"}, Choices: formats},
		&ucli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Destination: &o.quiet, Usage: "print nothing; the exit status tells"},
		cli.StateDirFlagInto(&o.stateDir),
		&ucli.StringFlag{Name: "schema-dir", Destination: &o.schemaDir, Usage: "take <kind>.schema.json files from `DIR` (default: the state directory's schemas/, else built in)"},
	)
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	app := cli.NewApp(cli.Spec{
		Name:        tool,
		Usage:       "check state files against their JSON Schemas",
		UsageText:   "validate-state --runs [PATH] | --results [PATH] | --all [--fix [--dry-run]] [options]\nvalidate-state [--kind KIND] [options] PATH...",
		Description: "Kinds: " + strings.Join(audit.Kinds, ", ") + ".",
		Manual:      &manual,
		ExitCodes: []cli.ExitCode{
			{Code: cli.ExitOK, Meaning: "every file is valid"},
			{Code: cli.ExitFailure, Meaning: "a file is invalid or unreadable"},
			{Code: cli.ExitUsage, Meaning: "usage error"},
		},
		Flags: o.AddFlags(nil),
		Action: func(c *ucli.Context) error {
			o.paths = c.Args().Slice()
			if o.json {
				o.format = "json"
			}
			return validate(c.Context, o, stdout, stderr)
		},
	}, stdout, stderr)
	return cli.Exit(tool, cli.Run(context.Background(), app, optionalValues(args)), stderr)
}

// optionalValues turns the original's optional-value flags into ones urfave/cli can read:
// "--runs PATH" and "--runs=PATH" become "--runs --runs-path PATH" (likewise --results); a bare
// "--runs" keeps its default directory. (cli.Run then moves the flags ahead of the positional
// arguments.)
func optionalValues(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if i > 0 && strings.HasPrefix(a, "-") && (name == "runs" || name == "results") {
			out = append(out, "--"+name)
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value, hasValue = args[i+1], true
				i++
			}
			if hasValue {
				out = append(out, "--"+name+"-path", value)
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// targets resolves the flags and paths into what to check.
func targets(o options) ([]audit.Target, error) {
	var ts []audit.Target
	add := func(enabled bool, paths []string, kind, dir string) {
		if !enabled {
			return
		}
		if len(paths) == 0 {
			paths = []string{filepath.Join(o.stateDir, dir)}
		}
		for _, p := range paths {
			ts = append(ts, audit.Target{Path: p, Kind: kind})
		}
	}
	// Unlike validate-state.sh, which checked only the last of --runs and --results, both count.
	add(o.runs || o.all, o.runsPath.Value(), "run", "runs")
	add(o.results || o.all, o.resPath.Value(), "result", "results")
	for _, p := range o.paths {
		kind := o.kind
		if kind == "" {
			kind = audit.KindFromPath(p)
		}
		if kind == "" {
			return nil, cli.Usagef("cannot tell what kind of state file %s holds; pass --kind (one of %s)", p, strings.Join(audit.Kinds, ", "))
		}
		ts = append(ts, audit.Target{Path: p, Kind: kind})
	}
	if len(ts) == 0 {
		return nil, cli.Usagef("nothing to check: give --runs, --results, --all or a PATH")
	}
	return ts, nil
}

// schemaDir is --schema-dir, else the workspace's state/schemas when it exists, else none.
func schemaDir(o options) (string, error) {
	if o.schemaDir != "" {
		if fi, err := os.Stat(o.schemaDir); err != nil || !fi.IsDir() {
			return "", cli.Usagef("--schema-dir %s is not a directory", o.schemaDir)
		}
		return o.schemaDir, nil
	}
	dir := filepath.Join(o.stateDir, "schemas")
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir, nil
	}
	return "", nil
}

func validate(_ context.Context, o options, stdout, stderr io.Writer) error {
	if o.dryRun && !o.fix {
		return cli.Usagef("--dry-run only goes with --fix")
	}
	ts, err := targets(o)
	if err != nil {
		return err
	}
	dir, err := schemaDir(o)
	if err != nil {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	retries, err := dispatchenv.Read(os.Getenv).MaxRetries.Int() // as dispatch reads it
	if err != nil {
		return err
	}
	var kinds []string
	for _, t := range ts {
		kinds = append(kinds, t.Kind)
	}
	auditor, warnings, err := audit.New(audit.Options{
		SchemaDir: dir, Fix: o.fix, DryRun: o.dryRun, MaxRetries: retries, StateDir: o.stateDir,
	}, kinds)
	if err != nil {
		return err
	}
	if !o.quiet {
		for _, w := range warnings {
			fmt.Fprintf(stderr, "%s: warning: %s\n", tool, record.Printable(w))
		}
	}

	out := newPrinter(o, stdout, stderr, warnings)
	tally := audit.Tally{}
	for _, k := range kinds {
		tally[k] = &audit.Count{} // every kind asked for gets its summary line, even with no files
	}
	auditor.Run(ts, func(r audit.Report) {
		tally.Add(r)
		out.file(r)
	})
	if err := out.summary(tally); err != nil {
		return err
	}
	if tally.Failed() > 0 {
		return &cli.ExitError{Code: cli.ExitFailure}
	}
	return nil
}

// printer writes the reports in the chosen format as they arrive.
type printer struct {
	o              options
	stdout, stderr io.Writer
	warnings       []string
	n              int
	wouldFix       int      // files --fix --dry-run would change
	ci             []ciFile // junit, sarif: written whole at the end
}

func newPrinter(o options, stdout, stderr io.Writer, warnings []string) *printer {
	p := &printer{o: o, stdout: stdout, stderr: stderr, warnings: warnings}
	if o.format == "json" {
		// One document, streamed: the files array is written as the reports arrive, so memory
		// does not grow with the number of files.
		fmt.Fprint(stdout, "{\n  \"files\": [")
	}
	return p
}

func (p *printer) file(r audit.Report) {
	if r.Problems == nil {
		r.Problems = []schema.Problem{}
	}
	switch p.o.format {
	case "json":
		b, _ := json.Marshal(r)
		sep := ","
		if p.n == 0 {
			sep = ""
		}
		fmt.Fprintf(p.stdout, "%s\n    %s", sep, b)
	case "github":
		p.github(r)
	case "junit", "sarif":
		p.ci = append(p.ci, ciFile{path: r.Path, kind: r.Kind, findings: findings(r)})
	default:
		p.text(r)
	}
	p.n++
}

func (p *printer) text(r audit.Report) {
	if p.o.dryRun {
		p.planned(r) // the data --dry-run asks for, so --quiet does not hide it
	}
	if p.o.quiet {
		return
	}
	if r.Fixed {
		p.fixed(r) // only a file really rewritten: a failed rewrite is a FAIL line below
	}
	if r.Valid {
		return
	}
	w := p.stderr
	// A file name is the state directory's, a problem quotes a record: neither may reach the
	// terminal as it is (record.QuoteName, record.Printable).
	path := record.QuoteName(r.Path)
	switch {
	case r.NotJSON && strings.HasPrefix(r.Error, "is not valid JSON"):
		// validate-state.sh's own line for unparsable files, kept for scripts that grep it.
		fmt.Fprintf(w, "FAIL: %s is not valid JSON\n  %s: %s\n", path, path, record.Printable(strings.TrimPrefix(r.Error, "is not valid JSON: ")))
	case r.Error != "":
		fmt.Fprintf(w, "FAIL: %s %s\n", path, record.Printable(r.Error))
	default:
		fmt.Fprintf(w, "FAIL: %s has %d validation error(s)\n", path, len(r.Problems)+r.MoreProblems)
		for _, pr := range r.Problems {
			fmt.Fprintf(w, "  %s: %s\n", path, record.Printable(pr.String()))
		}
		if r.MoreProblems > 0 {
			fmt.Fprintf(w, "  %s: and %d more problem(s) not listed\n", path, r.MoreProblems)
		}
		switch {
		case p.o.dryRun && r.FixWouldMend:
			fmt.Fprintf(w, "  %s: --fix would mend this file\n", path)
		case p.o.dryRun && len(r.Changes) > 0:
			fmt.Fprintf(w, "  %s: --fix would not mend all of it: what it cannot set needs a person\n", path)
		case p.o.fix && r.SetAside == "":
			fmt.Fprintf(w, "  %s: --fix could not mend the problems above: they need a person\n", path)
		}
	}
	if r.SetAside != "" {
		fmt.Fprintf(w, "SET ASIDE: %s: no reader can read it: moved to %s, where nothing is lost (a person may mend it there)\n", path, record.QuoteName(r.SetAside))
	}
}

// planned prints what --fix --dry-run would set, on stdout: it is the output asked for.
func (p *printer) planned(r audit.Report) {
	if len(r.Changes) > 0 || r.WouldSetAside {
		p.wouldFix++
	}
	if r.WouldSetAside {
		fmt.Fprintf(p.stdout, "%s: would set it aside in the attempts archive: no reader can read it\n", record.QuoteName(r.Path))
	}
	for _, c := range r.Changes {
		fmt.Fprintf(p.stdout, "%s: would set %s = %s\n", record.QuoteName(r.Path), c.Field, record.Printable(c.To))
	}
}

// fixed says on stderr which fields --fix set, and where the original went.
func (p *printer) fixed(r audit.Report) {
	fields := make([]string, len(r.Changes))
	for i, c := range r.Changes {
		fields[i] = c.Field
	}
	fmt.Fprintf(p.stderr, "FIXED: %s: set %s (original kept as %s)\n", record.QuoteName(r.Path), strings.Join(fields, ", "), record.QuoteName(r.Backup))
}

// github writes GitHub Actions workflow commands, one annotation per problem.
func (p *printer) github(r audit.Report) {
	if r.Valid || p.o.quiet {
		return
	}
	if r.Error != "" {
		fmt.Fprintf(p.stdout, "::error file=%s,title=%s::%s\n", ghProperty(r.Path), ghProperty(audit.KindLabel(r.Kind)), ghData(r.Path+" "+r.Error))
		return
	}
	for _, pr := range r.Problems {
		fmt.Fprintf(p.stdout, "::error file=%s%s,title=%s::%s\n", ghProperty(r.Path), ghPosition(pr.Line, pr.Col), ghProperty(pr.Pointer), ghData(pr.String()))
	}
	if r.MoreProblems > 0 {
		fmt.Fprintf(p.stdout, "::error file=%s,title=%s::%s\n", ghProperty(r.Path), ghProperty("/"), ghData(fmt.Sprintf("and %d more problem(s) not listed", r.MoreProblems)))
	}
}

// ghData escapes a workflow command's message (the log viewer obeys terminal colours and
// more, so control characters are escaped as record.Printable does); ghProperty also escapes
// its property separators.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(record.Printable(s))
}

func ghProperty(s string) string {
	return strings.NewReplacer(":", "%3A", ",", "%2C").Replace(ghData(s))
}

func (p *printer) summary(t audit.Tally) error {
	var err error
	switch p.o.format {
	case "junit": // the document on stdout, the summary on stderr as for text
		err = junit(p.stdout, p.ci, t)
	case "sarif":
		err = sarif(p.stdout, p.ci)
	}
	if err != nil {
		return err
	}
	if p.o.format == "json" {
		type kindCount struct {
			Kind string `json:"kind"`
			*audit.Count
		}
		s := struct {
			Valid    bool        `json:"valid"`
			Kinds    []kindCount `json:"kinds"`
			Warnings []string    `json:"warnings"`
		}{Valid: t.Failed() == 0, Warnings: p.warnings}
		if s.Warnings == nil {
			s.Warnings = []string{}
		}
		for _, k := range t.SortedKinds() {
			s.Kinds = append(s.Kinds, kindCount{k, t[k]})
		}
		b, _ := json.MarshalIndent(s, "  ", "  ")
		fmt.Fprintf(p.stdout, "\n  ],\n  \"summary\": %s\n}\n", b)
		return nil
	}
	if p.o.quiet {
		return nil
	}
	for _, k := range t.SortedKinds() {
		fmt.Fprintf(p.stderr, "%s: %d passed, %d failed\n", audit.KindLabel(k), t[k].Passed, t[k].Failed)
	}
	if p.o.dryRun {
		// The counts are of the files as they are on disk; nothing was written.
		fmt.Fprintf(p.stderr, "Dry run: the files as they are on disk; --fix would change %d of them\n", p.wouldFix)
	}
	return nil
}
