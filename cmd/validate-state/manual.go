package main

import "github.com/agentfleet/fleet/internal/cli"

// manual is what validate-state's man page says beyond its command line
// (`validate-state __man`), from docs/validate-state.md; the exit codes are the Spec's.
var manual = cli.Manual{
	Description: "validate-state checks the toolkit's state files against their JSON Schemas. It is a drop-in for " +
		"validate-state.sh (and for ajv-cli in CI): the same flags, FAIL: lines, summary and exit codes.\n\n" +
		"--runs and --results check a record file or a directory of them (default: the state directory's runs/ and " +
		"results/); --all checks both. A PATH's kind comes from a runs/ or results/ directory in the path, from where " +
		"ralph keeps its files, or from --kind.\n\n" +
		"For each invalid file, FAIL: FILE has N validation error(s), its problems indented under it, then a summary " +
		"per kind, all on stderr. --json prints one JSON document on stdout instead; --format github prints workflow " +
		"annotations, junit JUnit XML, sarif a SARIF 2.1.0 log (docs/ci.md).\n\n" +
		"--fix migrates legacy run and result records to full schema-v1 records, after copying each file it changes to FILE.bak.",
	Environment: []cli.Entry{
		{Name: "DISPATCH_MAX_RETRIES", Meaning: "with --fix: the max_retries written into migrated records (default 2)"},
		{Name: "GOMEMLIMIT", Meaning: "when set, the Go runtime's memory limit instead of validate-state's 192 MiB"},
	},
	Files: []cli.Entry{
		{Name: "STATE_DIR/runs/, STATE_DIR/results/", Meaning: "the records --runs, --results and --all check"},
		{Name: "STATE_DIR/schemas/KIND.schema.json", Meaning: "a workspace's own schemas, used instead of the built-in ones when there (--schema-dir chooses another directory)"},
		{Name: "FILE.bak", Meaning: "with --fix: the copy of a record before it was changed"},
	},
	Examples: []cli.Example{
		{Command: "validate-state --all", Meaning: "Check every run and result record of ./state."},
		{Command: "validate-state --all --format github", Meaning: "In a GitHub workflow: an annotation at each problem's line."},
		{Command: "validate-state --kind task-queue .claude/ralph/task-queue-p1.json", Meaning: "Check one file of a given kind."},
		{Command: "validate-state --runs --fix --dry-run", Meaning: "Show how legacy run records would be migrated, and write nothing."},
	},
}
