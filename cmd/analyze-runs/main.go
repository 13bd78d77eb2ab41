// Command analyze-runs reports how a fleet of coding agents is doing, from the run and result
// records dispatch leaves in the state directory. It is a drop-in for analyze-runs.sh (the
// FLYWHEEL report, its --json document and its --since filter) and score-templates.sh
// (--templates), made for cron: it streams the records, so a million of them take seconds and a
// few hundred megabytes at most.
//
// Usage:
//
//	analyze-runs [--json | --format FORMAT] [--since DATE] [--until DATE] [filters] [options]
//	analyze-runs --templates [--json] [--write-scores] [filters]
//
// The records are <state-dir>/runs/<bead>.json and <state-dir>/results/<bead>.json, merged by
// bead; results/<bead>-verify.json is merged into its bead as its verification. The state
// directory is --state-dir, else $STATE_DIR, else ./state.
//
// Filters: --since DATE and --until DATE (YYYY-MM-DD, or an RFC 3339 time; --until DATE keeps
// that whole day), --agent NAME, --model NAME, --template NAME (each may be repeated or given a
// comma-separated list).
//
// Formats: text (the original's report, byte for byte), json (its document; same as --json),
// markdown, csv (one row per merged record), html (one self-contained page with charts, no
// network requests) and prometheus (the text exposition format, for node_exporter's textfile
// collector).
//
// Options: --by day|week groups runs over time (runs, success rate, median duration per period);
// --detailed adds the duration percentiles to the text report (they are always in the others);
// --attempts also counts the earlier attempts kept in <state-dir>/attempts/<bead>/;
// --templates prints the template scores instead, and --write-scores writes them to
// <state-dir>/template-scores.json; --fail-under PCT exits 3 when the success rate is below PCT.
//
// A record that cannot be read is named in a warning on stderr and left out; the report says
// how many were. The report goes to stdout, diagnostics to stderr.
//
// Exit status: 0 the report was written; 1 the state directory is missing or a report could not
// be written; 2 usage error; 3 the success rate is below --fail-under.
package main

import "os"

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}
