package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/report"
	"github.com/agentfleet/fleet/internal/statedir"
	ucli "github.com/urfave/cli/v2"
)

const tool = "analyze-runs"

// exitBelow is the exit status when the success rate is below --fail-under, so that cron and CI
// can tell "the fleet is doing badly" from "the report failed" (1).
const exitBelow = 3

// maxWarnings is how many unreadable files are named one by one; the rest are counted, so a
// broken state directory does not flood a cron mail.
const maxWarnings = 20

// ioProcs is the GOMAXPROCS for the scan, unless the environment sets one. Reading a record
// that is not in the page cache blocks in the kernel, and the runtime gives a blocked thread's
// P to another goroutine only once sysmon notices (20 µs to 10 ms later): with one P per core,
// reads queue for a P rather than for the disk. On the 2-core development machine, a million
// pairs read cold took 94 s with 2, 64 s with 4, 53 s with 8 and 39 s with 16 (then the kernel's
// own time per read is the bound), and a warm 100,000 pairs lost about a tenth.
const ioProcs = 16

// memoryLimit is the Go runtime's soft memory limit unless GOMEMLIMIT sets one: near it the
// garbage collector works harder, so the peak RSS follows the live heap, which the readers'
// budget and the aggregator's bounds keep under it, rather than twice that. A million pairs
// need about 190 MB.
const memoryLimit = 256 << 20

// cacheGCPercent is the garbage collector's percent while a scan takes beads from the cache,
// unless GOGC sets one (tuneForCache): a million pairs with 1% new, A/B alternated,
// spent 0.3 s less user CPU at 400 than at 100, for 20 MB more RSS (the memory limit still holds).
const cacheGCPercent = 400

// cacheMemoryLimit is the soft memory limit while a scan takes beads from the cache, plus
// report.CacheScanMemory (160 bytes per record pair), unless GOMEMLIMIT sets one (tuneForCache):
// the heap of such
// a scan grew to memoryLimit whatever it held. A million pairs, 1% new scattered among the old,
// A/B alternated: peak RSS 305 -> 250 MB.
const cacheMemoryLimit = 32 << 20

// cacheFresh is the cache's Fresh: the tests set it to 0, so that the records they have just
// written are cached.
var cacheFresh = report.DefaultCacheFresh

// options are analyze-runs' flags, each written into its field by the flag (AddFlags), then
// resolved (resolve).
type options struct {
	stateDir                  string
	format                    string
	json                      bool // --json: resolve makes it the format
	since, until              string
	agents, models, templates ucli.StringSlice
	by                        string
	detailed, attempts        bool
	scores, writeScores       bool
	failUnderText             string // --fail-under as given: resolve reads it into failUnder
	failUnderGiven            bool
	failUnder                 float64
	hasFailUnder              bool
	noCache, rebuildCache     bool
	verifyCache               bool
}

// AddFlags appends analyze-runs' flags, each writing into o, to flags.
func (o *options) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		cli.StateDirFlagInto(&o.stateDir),
		&ucli.BoolFlag{Name: "json", Destination: &o.json, Usage: "print the JSON document (same as --format json)"},
		&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "format", Destination: &o.format, Usage: "text, json, markdown, csv, html or prometheus (default text)"}, Choices: formats},
		&ucli.StringFlag{Name: "since", Destination: &o.since, Usage: "count runs started, or finished, on or after `DATE` (YYYY-MM-DD or RFC 3339; a year, a month, YYYYMMDD or \"YYYY-MM-DD HH:MM\": from its start)"},
		&ucli.StringFlag{Name: "until", Destination: &o.until, Usage: "count runs started before the end of `DATE` (a day, a month: all of it; a time: up to it)"},
		&ucli.StringSliceFlag{Name: "agent", Destination: &o.agents, Usage: "count only runs of agent `NAME` (repeat or comma-separate for several)"},
		&ucli.StringSliceFlag{Name: "model", Destination: &o.models, Usage: "count only runs of model `NAME`"},
		&ucli.StringSliceFlag{Name: "template", Destination: &o.templates, Usage: "count only runs of template `NAME` (\"custom\": runs naming none)"},
		&cli.EnumFlag{StringFlag: ucli.StringFlag{Name: "by", Destination: &o.by, Usage: "group runs over time by `PERIOD`: day or week"},
			Choices: []string{report.PeriodDay, report.PeriodWeek},
			Invalid: func(v string) error { return cli.Usagef("unknown --by %q; use day or week", v) }},
		&ucli.BoolFlag{Name: "detailed", Destination: &o.detailed, Usage: "text: add the duration percentiles (p50, p90, max)"},
		&ucli.BoolFlag{Name: "attempts", Destination: &o.attempts, Usage: "also count the earlier attempts in <state-dir>/attempts/<bead>/"},
		&ucli.BoolFlag{Name: "templates", Destination: &o.scores, Usage: "print the template scores (score-templates.sh) instead"},
		&ucli.BoolFlag{Name: "write-scores", Destination: &o.writeScores, Usage: "write the template scores to <state-dir>/template-scores.json"},
		&ucli.StringFlag{Name: "fail-under", Destination: &o.failUnderText, Action: cli.Given[string](&o.failUnderGiven),
			Usage: fmt.Sprintf("exit %d when the success rate is below `PCT` percent", exitBelow)},
		&ucli.BoolFlag{Name: "no-cache", Destination: &o.noCache, Usage: "read every record; leave <state-dir>/cache/analyze-runs.db as it is"},
		&ucli.BoolFlag{Name: "rebuild-cache", Destination: &o.rebuildCache, Usage: "read every record and write the cache anew"},
		&ucli.BoolFlag{Name: "verify-cache", Destination: &o.verifyCache, Usage: "read every record, warn where the cache differs from them, and write it anew"},
	)
}

var formats = []string{"text", "json", "markdown", "csv", "html", "prometheus"}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	app := cli.NewApp(cli.Spec{
		Name:  tool,
		Usage: "report how the fleet's agent runs are doing (drop-in for analyze-runs.sh and score-templates.sh)",
		UsageText: "analyze-runs [--json | --format FORMAT] [--since DATE] [--until DATE] [filters] [options]\n" +
			"analyze-runs --templates [--json] [--write-scores] [filters]",
		Description: "Reads <state-dir>/runs and <state-dir>/results, merged by bead.",
		Manual:      &manual,
		ExitCodes: []cli.ExitCode{
			{Code: cli.ExitOK, Meaning: "report written"},
			{Code: cli.ExitFailure, Meaning: "missing state directory or write failure"},
			{Code: cli.ExitUsage, Meaning: "usage error"},
			{Code: exitBelow, Meaning: "success rate below --fail-under"},
		},
		Flags: o.AddFlags(nil),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return cli.Usagef("unexpected argument %q", c.Args().First())
			}
			if err := o.resolve(); err != nil {
				return err
			}
			return analyze(o, stdout, stderr)
		},
	}, stdout, stderr)
	return cli.Exit(tool, cli.Run(context.Background(), app, args), stderr)
}

// resolve checks the flags against each other and fills in the defaults.
func (o *options) resolve() error {
	asJSON, failUnder := o.json, o.failUnderText
	if o.failUnderGiven && failUnder == "" {
		failUnder = `""` // given empty: not a percentage, not "no threshold"
	}
	switch {
	case asJSON && o.format != "" && o.format != "json":
		return cli.Usagef("--json and --format %s ask for two formats; give one", o.format)
	case asJSON:
		o.format = "json"
	case o.format == "":
		o.format = "text"
	}
	if o.scores && o.format != "text" && o.format != "json" {
		return cli.Usagef("--templates prints text or json, not %s", o.format)
	}
	if o.noCache && (o.rebuildCache || o.verifyCache) {
		return cli.Usagef("--no-cache leaves the cache alone; --rebuild-cache and --verify-cache write it")
	}
	if (o.rebuildCache || o.verifyCache) && o.format == "json" && !o.scores {
		return cli.Usagef("--json reads every record and does not use the cache; give --rebuild-cache or --verify-cache without it")
	}
	if failUnder != "" {
		v, ok := percentage(failUnder)
		if !ok {
			return cli.Usagef("--fail-under %q is not a percentage from 0 to 100", failUnder)
		}
		o.failUnder, o.hasFailUnder = v, true
	}
	return nil
}

// percentage reads --fail-under's PCT: digits, an optional fraction and an optional '%', from
// 0 to 100. strconv.ParseFloat alone also takes NaN (which compares false with every rate, so
// the threshold never fired), Inf, hex and exponents.
func percentage(s string) (float64, bool) {
	s = strings.TrimSuffix(s, "%")
	whole, frac, hasFrac := strings.Cut(s, ".")
	if whole == "" || strings.Trim(whole, "0123456789") != "" || hasFrac && (frac == "" || strings.Trim(frac, "0123456789") != "") {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil && v >= 0 && v <= 100
}

// now is the report's time: SOURCE_DATE_EPOCH when set (reproducible reports, tests), else now.
func now() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Now().UTC()
}

// analyze reads the records o selects and writes the report o asks for.
func analyze(o options, stdout, stderr io.Writer) error {
	filter, err := report.NewFilter(o.since, o.until, o.agents.Value(), o.models.Value(), o.templates.Value())
	if err != nil {
		return cli.Usagef("%v", err)
	}
	period := o.by
	if o.format == "html" && period == "" {
		period = report.PeriodDay // the success-rate-over-time chart
	}
	tuneRuntime()
	agg := report.NewAggregator(period)
	src := newSource(o)
	var spool *report.Spool
	if src.Raw {
		spool = &report.Spool{}
		defer spool.Close()
	}
	out := bufio.NewWriterSize(stdout, 1<<20)
	var rows *report.CSVWriter
	if o.format == "csv" {
		// Rows need no totals: they go out as the records are read.
		rows = report.NewCSVWriter(out)
	}
	if src.Cache != nil && filter.All() && rows == nil {
		// Every bead is counted and none written out: the unchanged chunks' totals will do.
		src.Merge = agg.Merge
	}
	warned, err := scan(src, filter, agg, spool, rows, stderr)
	if errors.Is(err, report.ErrNoStateDir) {
		return fmt.Errorf("state directory %s not found; pass --state-dir DIR or set STATE_DIR", o.stateDir)
	}
	if err != nil {
		return err
	}
	if src.Cache != nil {
		warnCache(stderr, src.Cache.Stats)
	}
	warnSkipped(stderr, warned)

	at := now()
	rep := report.NewReport(agg, filter, at)
	rep.Detailed = o.detailed
	rep.Raw = spool
	scores := agg.TemplateScores(at)
	scoresPath := ""
	if o.writeScores {
		scoresPath = filepath.Join(o.stateDir, "template-scores.json")
		if err := writeScores(scoresPath, scores); err != nil {
			return err
		}
	}
	if err := writeReport(out, o, rep, scores, scoresPath, rows); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return judge(o, rep.Stats, stderr)
}

// tuneRuntime sets the runtime for a scan that waits on the disk more than it computes: more
// threads than cores and a soft memory limit, unless GOMAXPROCS or GOMEMLIMIT say otherwise.
func tuneRuntime() {
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < ioProcs {
		runtime.GOMAXPROCS(ioProcs)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
}

// newSource is where o's records are read from: with the cache unless o reads every record.
func newSource(o options) report.Source {
	src := report.Source{Dir: o.stateDir, Attempts: o.attempts, Raw: o.format == "json" && !o.scores}
	if !o.noCache && !src.Raw {
		src.Cache = report.NewCache(statedir.Dir{Root: o.stateDir}.ReportCache(), tool+" "+cli.Version())
		src.Cache.Rebuild, src.Cache.Verify, src.Cache.Fresh = o.rebuildCache, o.verifyCache, cacheFresh
		src.Cache.Reusing = tuneForCache(os.Getenv("GOGC") == "", os.Getenv("GOMEMLIMIT") == "")
	}
	return src
}

// scan counts in agg every bead of src that filter matches, adding its records to spool and
// its row to rows when they are not nil, and warns of the first maxWarnings files it could not
// read. It returns how many it could not read.
func scan(src report.Source, filter report.Filter, agg *report.Aggregator, spool *report.Spool, rows *report.CSVWriter, stderr io.Writer) (int, error) {
	warned := 0
	err := src.Scan(func(b *report.Bead) {
		if !filter.Match(b) {
			return
		}
		agg.Add(b)
		if spool != nil {
			spool.Add(b.Raw)
		}
		if rows != nil {
			rows.Write(b)
		}
	}, func(sk report.Skipped) {
		agg.Skip()
		if warned < maxWarnings {
			// The name is the state directory's and the error may quote a record: neither
			// reaches the terminal as it is.
			fmt.Fprintf(stderr, "%s: warning: skipping %s: %s\n", tool, record.QuoteName(sk.Path), record.Printable(sk.Err.Error()))
		}
		warned++
	})
	return warned, err
}

// warnCache warns of a cache that could not be read or used, and of the records that differed
// from it.
func warnCache(stderr io.Writer, st report.CacheStats) {
	switch {
	case st.Unreadable != "" && st.Off == "":
		fmt.Fprintf(stderr, "%s: warning: the cache cannot be read (%s): it is written anew from the records\n", tool, record.Printable(st.Unreadable))
	case st.Unreadable != "":
		fmt.Fprintf(stderr, "%s: warning: the cache cannot be read (%s): %s\n", tool, record.Printable(st.Unreadable), record.Printable(st.Off))
	case st.Warn:
		fmt.Fprintf(stderr, "%s: warning: the cache is not used: %s\n", tool, record.Printable(st.Off))
	}
	for _, path := range st.Differences {
		fmt.Fprintf(stderr, "%s: warning: the cache had %s otherwise: it was changed in place, its size and times kept\n", tool, record.QuoteName(path))
	}
	if st.Differ > 0 {
		fmt.Fprintf(stderr, "%s: warning: %d record pair(s) differed from the cache (%d not named above); the report and the cache are the records'\n",
			tool, st.Differ, st.Differ-len(st.Differences))
	}
}

// warnSkipped sums up the warned record files left out of the report, if any.
func warnSkipped(stderr io.Writer, warned int) {
	if warned == 0 {
		return
	}
	more := ""
	if warned > maxWarnings {
		more = fmt.Sprintf(" (%d not named above)", warned-maxWarnings)
	}
	fmt.Fprintf(stderr, "%s: warning: %d unreadable record file(s) left out of the report%s\n", tool, warned, more)
}

// writeScores writes the template scores to path (--write-scores).
func writeScores(path string, scores report.TemplateScores) error {
	var doc bytes.Buffer
	if err := report.WriteTemplatesJSON(&doc, scores); err != nil {
		return err
	}
	// Atomic, as the original's mktemp and mv: select-template.sh may be reading it.
	if err := fsx.WriteFileAtomic(path, doc.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing template scores: %w", err)
	}
	return nil
}

// writeReport writes the report in o's format to out and flushes it. CSV rows went out during
// the scan: they are only flushed.
func writeReport(out *bufio.Writer, o options, rep *report.Report, scores report.TemplateScores, scoresPath string, rows *report.CSVWriter) error {
	var err error
	switch {
	case o.scores && o.format == "json":
		err = report.WriteTemplatesJSON(out, scores)
	case o.scores:
		err = report.WriteTemplatesText(out, scores, scoresPath)
	case o.format == "json":
		err = report.WriteJSON(out, rep)
	case o.format == "markdown":
		err = report.WriteMarkdown(out, rep)
	case o.format == "csv":
		err = rows.Flush()
	case o.format == "html":
		err = report.WriteHTML(out, rep)
	case o.format == "prometheus":
		err = report.WritePrometheus(out, rep)
	default:
		err = report.WriteText(out, rep)
	}
	if err != nil {
		return err
	}
	return out.Flush()
}

// judge holds the success rate against --fail-under, when given: below it is exitBelow.
func judge(o options, s report.Statistics, stderr io.Writer) error {
	if !o.hasFailUnder {
		return nil
	}
	switch {
	case s.TotalRuns == 0:
		fmt.Fprintf(stderr, "%s: no runs to judge against --fail-under\n", tool)
	case s.SuccessRate < o.failUnder:
		return &cli.ExitError{Code: exitBelow, Err: fmt.Errorf("success rate %s%% is below --fail-under %s%% (%d of %d runs succeeded)",
			strconv.FormatFloat(s.SuccessRate, 'f', 1, 64), strconv.FormatFloat(o.failUnder, 'f', -1, 64), s.Success, s.TotalRuns)}
	}
	return nil
}

// tuneForCache is report.Cache.Reusing: while a scan takes beads from the cache, the garbage
// collector runs at cacheGCPercent (when gc, GOGC unset) under a soft memory limit of
// cacheMemoryLimit plus report.CacheScanMemory, never above the limit it had (when limit,
// GOMEMLIMIT unset); what they were is put back after. The process's runtime is the main's to
// set, not the library's.
func tuneForCache(gc, limit bool) func(pairs int) func() {
	return func(pairs int) func() {
		gcWas, limWas := 0, int64(0)
		if gc {
			gcWas = debug.SetGCPercent(cacheGCPercent)
		}
		if limit {
			was := debug.SetMemoryLimit(-1)
			if lim := cacheMemoryLimit + report.CacheScanMemory(pairs); lim < was {
				limWas = debug.SetMemoryLimit(lim)
			}
		}
		return func() {
			if gcWas != 0 {
				debug.SetGCPercent(gcWas)
			}
			if limWas != 0 {
				debug.SetMemoryLimit(limWas)
			}
		}
	}
}
