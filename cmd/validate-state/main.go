// Command validate-state checks the toolkit's state files against their JSON Schemas, for CI and
// for people. It is a drop-in for validate-state.sh (and for ajv-cli in CI).
//
// Usage:
//
//	validate-state --runs [PATH] | --results [PATH] | --all [--fix [--dry-run]] [options]
//	validate-state [--kind KIND] PATH...
//
// --runs and --results check a record file or a directory of them (default: the state
// directory's runs/ and results/); --all checks both. Positional PATHs are files or directories;
// their kind comes from a runs/ or results/ directory in the path, from where ralph keeps its
// files (.claude/ralph/task-queue-P.json, …; ralph/NAME/state.json; ralph/loops/ID/state.json, …/analytics/analytics.json),
// or from --kind: run, result,
// swarm-state, ralph-state, loop-state, loop-analytics, task-queue, retry-queue, progress, agent-state,
// manifest (work.yaml) or execution.
//
// Schemas: the workspace's state/schemas/<kind>.schema.json when it exists (users' own schemas,
// used as they are), else the schema built into the binary; --schema-dir DIR chooses another
// directory. A schema keyword the validator does not implement is warned about, never ignored
// in silence.
//
// --fix migrates legacy run and result records to full schema-v1 records, after copying each
// file it changes to <file>.bak; --dry-run prints what would change and writes nothing.
//
// Output: for each invalid file "FAIL: <file> has N validation error(s)" with its problems
// indented under it, then "Run records: P passed, F failed" (and so on per kind), all on stderr.
// --json prints one JSON document on stdout instead; --format github prints workflow annotations
// at each problem's line and column; --format junit prints JUnit XML, --format sarif a SARIF
// 2.1.0 log (docs/ci.md); --quiet prints nothing but a document asked for.
//
// Exit status: 0 every file is valid, 1 a file is invalid or unreadable, 2 usage error.
package main

import "os"

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}
