package main

import "github.com/agentfleet/fleet/internal/cli"

// manual is what analyze-runs' man page says beyond its command line (`analyze-runs __man`),
// from docs/analyze-runs.md; the exit codes are the Spec's.
var manual = cli.Manual{
	Description: "analyze-runs reports how the fleet's agents are doing, from the run and result records dispatch leaves " +
		"in the state directory (runs/ and results/, merged by bead). It is a drop-in for analyze-runs.sh (the report, " +
		"its --json document, --since) and score-templates.sh (--templates).\n\n" +
		"DATE is YYYY-MM-DD (midnight UTC; --until keeps that whole day), an RFC 3339 time, or a shortened form " +
		"(2026, 2026-02, 20260210, 2026-02-10T12) read as the period it names; a time without a zone is UTC. " +
		"A record that cannot be read is named in a warning on stderr and skipped; a symbolic link is never followed.",
	Environment: []cli.Entry{
		{Name: "SOURCE_DATE_EPOCH", Meaning: "when set, the report's time (reproducible reports)"},
		{Name: "GOMAXPROCS, GOMEMLIMIT, GOGC", Meaning: "when set, used as they are instead of the scan's own settings"},
	},
	Files: []cli.Entry{
		{Name: "STATE_DIR/runs/*.json, STATE_DIR/results/*.json", Meaning: "the run and result records read"},
		{Name: "STATE_DIR/attempts/BEAD/", Meaning: "with --attempts: the earlier attempts' records"},
		{Name: "STATE_DIR/cache/analyze-runs.db", Meaning: "the cache of records already read (--no-cache, --rebuild-cache, --verify-cache)"},
		{Name: "STATE_DIR/template-scores.json", Meaning: "written by --write-scores"},
	},
	Examples: []cli.Example{
		{Command: "analyze-runs --since 2026-02-01 --detailed", Meaning: "The report of the runs since February, with duration percentiles."},
		{Command: "analyze-runs --format prometheus > /var/lib/node_exporter/fleet.prom", Meaning: "Metrics for a Prometheus text-file collector."},
		{Command: "analyze-runs --since \"$(date -u -d yesterday +%F)\" --fail-under 70", Meaning: "A cron line: the last day's report, exit 3 when fewer than 70% succeeded."},
		{Command: "analyze-runs --templates --write-scores", Meaning: "Score the prompt templates and write STATE_DIR/template-scores.json."},
	},
}
