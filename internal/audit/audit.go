// Package audit checks state files against their schemas, many files at once, and migrates
// legacy run and result records to full ones. It is validate-state's engine: the command
// resolves flags into Targets, and audit expands them into files, checks each on every core
// and reports them in a stable order.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ordered"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/statedir"
	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"
)

// Kinds are the kinds of state file audit knows, in the order summaries list them.
var Kinds = []string{"run", "result", "swarm-state", "ralph-state", "loop-state", "loop-analytics", "task-queue",
	"retry-queue", "progress", "agent-state", "manifest", "execution"}

// KindLabel is how a summary line names the files of a kind ("Run records: 3 passed, 0 failed").
func KindLabel(kind string) string {
	switch kind {
	case "run":
		return "Run records"
	case "result":
		return "Result records"
	case "manifest":
		return "Manifests"
	case "execution":
		return "Execution states"
	}
	words := strings.Split(kind, "-")
	words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
	return strings.Join(words, " ") + " files"
}

// KnownKind reports whether kind is one of Kinds.
func KnownKind(kind string) bool {
	for _, k := range Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// KindFromPath guesses the kind of the files at path from a "runs" or "results" directory in it
// (state/runs, state/runs/bd-1.json), else from where the toolkit's other tools keep their files:
// the task queue's .claude/ralph/{task-queue,retry-queue,progress}-<plan>.json and
// agent-state-<agent>.json (and a completed plan's archive/task-queue-<plan>-<time>.json),
// swarm's loops' ralph/<name>/state.json, AIWG's loops'
// ralph/loops/<loop_id>/state.json and analytics/analytics.json. It returns "" when the path
// does not tell.
func KindFromPath(path string) string {
	clean := filepath.Clean(path)
	dir := filepath.Dir(clean)
	for _, name := range []string{filepath.Base(clean), filepath.Base(dir)} {
		if kind := statedir.DirKind(name); kind != "" {
			return kind
		}
	}
	base := filepath.Base(clean)
	if filepath.Base(dir) == "ralph" && strings.HasSuffix(base, ".json") {
		for _, kind := range []string{"task-queue", "retry-queue", "progress", "agent-state"} {
			if strings.HasPrefix(base, kind+"-") && len(base) > len(kind)+len("-.json") {
				return kind
			}
		}
	}
	if filepath.Base(dir) == "archive" && filepath.Base(filepath.Dir(dir)) == "ralph" &&
		strings.HasPrefix(base, "task-queue-") && strings.HasSuffix(base, ".json") {
		return "task-queue" // a completed plan's queue, archived by ralph queue run
	}
	if base == "analytics.json" && filepath.Base(dir) == "analytics" {
		if loops := filepath.Dir(filepath.Dir(dir)); filepath.Base(loops) == "loops" && filepath.Base(filepath.Dir(loops)) == "ralph" {
			return "loop-analytics" // an AIWG loop's loops/<loop_id>/analytics/analytics.json
		}
	}
	if base == "state.json" {
		switch filepath.Base(filepath.Dir(dir)) {
		case "loops":
			if filepath.Base(filepath.Dir(filepath.Dir(dir))) == "ralph" {
				return "loop-state"
			}
		case "ralph":
			return "ralph-state"
		}
	}
	return ""
}

// Target is a file or directory to check, with the kind of the files in it.
type Target struct {
	Path string
	Kind string
}

// Options says how to check.
type Options struct {
	// SchemaDir holds <kind>.schema.json files that override the embedded schemas ("" = none).
	SchemaDir string
	// Fix migrates legacy run and result records before checking them; DryRun only says how.
	Fix, DryRun bool
	// MaxRetries is the max_retries a migrated record gets when neither record of its bead has one.
	MaxRetries int
	// StateDir is where a record's partner (the result of a run, the run of a result) is looked
	// for when the record does not sit in a runs or results directory.
	StateDir string
	// Workers is how many files are checked at once (0 = two per core).
	Workers int
}

// MaxProblems is how many problems of one file a Report lists (sorted, so the first ones by
// pointer); the rest are counted.
const MaxProblems = 100

// Report is the verdict on one file (or on a target that could not be read at all).
type Report struct {
	Path  string `json:"path"`
	Kind  string `json:"kind"`
	Valid bool   `json:"valid"`
	// Error says why the file could not be checked at all: unreadable, not JSON, missing. Empty
	// when the file was parsed; then Problems lists what the schema found.
	Error    string           `json:"error,omitempty"`
	Problems []schema.Problem `json:"problems"`
	// MoreProblems counts the problems found beyond the first MaxProblems, which are not kept:
	// a file of a million wrong fields is one failure, not a million lines.
	MoreProblems int `json:"more_problems,omitempty"`
	// NotJSON is set when the file was read but is not one well-formed JSON (or YAML) document.
	NotJSON bool `json:"-"`
	// Changes are the fields --fix set (or would set, with --dry-run); empty when a fix failed.
	Changes []record.Change `json:"changes,omitempty"`
	// Fixed is set when --fix really rewrote the file (never with DryRun).
	Fixed bool `json:"fixed,omitempty"`
	// FixWouldMend is set, with DryRun, when the Changes would make the file valid.
	FixWouldMend bool `json:"fix_would_mend,omitempty"`
	// Backup is the copy of the original --fix made before rewriting the file.
	Backup string `json:"backup,omitempty"`
	// SetAside is where --fix moved a record no reader can read (not JSON, a field of the wrong
	// type): a new directory of the state directory's attempts archive (record.SetAside). With
	// DryRun, WouldSetAside says it would.
	SetAside      string `json:"set_aside,omitempty"`
	WouldSetAside bool   `json:"would_set_aside,omitempty"`
}

// Auditor checks files against compiled schemas; it is safe for concurrent use.
type Auditor struct {
	opts    Options
	schemas map[string]*schema.Schema
	budget  *record.Budget
}

// MemoryBudget bounds what the workers other than the head hold at once: the documents they
// read and what checking them costs (gojsonschema's decoding and problems, a migration's copy, a
// manifest's YAML). Small records take a few kilobytes each, so the bound only ever makes the
// large ones wait; the head (the next report to print) never waits, so the most held is the
// budget and the head's own cost (at most schema.MaxValues values' worth: about 100 MB).
const MemoryBudget = 64 << 20

// MaxManifestSize is the largest manifest (work.yaml) read: decoding YAML allocates about 100
// bytes per byte of it, and a manifest holds a few kilobytes.
const MaxManifestSize = 256 << 10

// yamlCost is what decoding a byte of YAML allocates, at most (measured: 98).
const yamlCost = 100

// migrateCost is what a migration allocates per JSON value of the record it migrates, beyond
// copies of the document (its fields are held in a map).
const migrateCost = 256

// New compiles the schemas of the given kinds once. Warnings name the keywords a schema uses that
// the validator does not implement.
func New(opts Options, kinds []string) (a *Auditor, warnings []string, err error) {
	a = &Auditor{opts: opts, schemas: map[string]*schema.Schema{}, budget: record.NewBudget(MemoryBudget)}
	for _, k := range kinds {
		if a.schemas[k] != nil {
			continue
		}
		s, err := schema.Load(k, opts.SchemaDir)
		if err != nil {
			return nil, nil, err
		}
		for _, kw := range s.Unsupported {
			warnings = append(warnings, fmt.Sprintf("schema %s uses %q, which this validator does not implement: that keyword is not checked", s.Source, kw))
		}
		a.schemas[k] = s
	}
	return a, warnings, nil
}

// Schema returns the compiled schema used for kind.
func (a *Auditor) Schema(kind string) *schema.Schema { return a.schemas[kind] }

// listing is what a target expands to: the names of the files to check in dir (sorted), or
// the one file the target names, or a failure that stands for the whole target. Names are kept
// apart from the directory and joined one at a time, so a listing costs a string per file.
type listing struct {
	dir     string
	dirfd   int // the open directory, or fsx.Cwd for a single file
	names   []string
	kind    string
	failure string
}

func (ls listing) path(i int) string {
	if ls.dir == "" {
		return ls.names[i]
	}
	return ls.dir + string(filepath.Separator) + ls.names[i]
}

// expand lists the files of a target: a file as it is, a directory's *.json entries (and
// *.yaml, *.yml for manifests) sorted by name, not descending into subdirectories.
func expand(t Target) listing {
	fi, err := os.Stat(t.Path)
	if err != nil {
		return listing{names: []string{t.Path}, kind: t.Kind, failure: describe(err)}
	}
	if !fi.IsDir() {
		return listing{names: []string{t.Path}, kind: t.Kind, dirfd: fsx.Cwd}
	}
	names, err := fsx.Names(t.Path, func(n string) (string, bool) { return n, matches(n, t.Kind) && !isVerify(n, t.Kind) })
	if err != nil {
		return listing{names: []string{t.Path}, kind: t.Kind, failure: describe(err)}
	}
	dirfd, err := syscall.Open(t.Path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return listing{names: []string{t.Path}, kind: t.Kind, failure: describe(err)}
	}
	return listing{dir: filepath.Clean(t.Path), dirfd: dirfd, names: names, kind: t.Kind}
}

// matches picks the files of a directory to check: the .json ones (and a manifest's YAML), not
// hidden temp files of an atomic write in progress, nor the <bead>.json.lock sidecars that record
// writers before statedir's locks/ left in runs/ and results/.
func matches(name, kind string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	ext := filepath.Ext(name)
	return ext == ".json" || (kind == "manifest" && (ext == ".yaml" || ext == ".yml"))
}

// isVerify reports whether name, in a directory of results, is verify.sh's output beside a
// result (results/<bead>-verify.json): a verification, not a result record, as analyze-runs
// reads it. validate-state.sh read it as a result and failed it; --fix would have made it one.
func isVerify(name, kind string) bool {
	if kind != "result" {
		return false
	}
	bead, ok := statedir.RecordBead(name)
	if !ok {
		return false
	}
	_, ok = statedir.VerifyBead(bead)
	return ok
}

// describe turns a file system error into the words a user needs, without Go's "open x:" prefix.
func describe(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "does not exist"
	case errors.Is(err, os.ErrPermission):
		return "cannot be read: permission denied"
	}
	return "cannot be read: " + err.Error()
}

// Run checks every file of the targets, workers at a time, and calls emit with each report in
// the targets' order. Targets are taken one after the other (their files in parallel), so that
// with Fix a result's migration always reads its run as already migrated, whatever the timing.
func (a *Auditor) Run(targets []Target, emit func(Report)) {
	workers := a.opts.Workers
	if workers <= 0 {
		// Reading is part I/O, part parsing: twice the cores keeps both busy.
		workers = 2 * runtime.GOMAXPROCS(0)
	}
	for _, t := range targets {
		ls := expand(t)
		if ls.failure != "" {
			emit(Report{Path: t.Path, Kind: t.Kind, Error: ls.failure})
			continue
		}
		if ls.dir != "" && a.opts.Fix && !a.opts.DryRun && (t.Kind == "run" || t.Kind == "result") {
			a.sweep(ls.dir, t.Kind)
		}
		// The head (the next report to emit) never waits for the budget: the checks after it
		// may hold it all, and the head is what lets them go on.
		a.budget.SetHead(0)
		ordered.Map(len(ls.names), workers, 8*workers, func(i int) Report {
			return a.check(ls, i)
		}, func(i int, r Report) {
			a.budget.SetHead(i + 1)
			emit(r)
		})
		if ls.dirfd != fsx.Cwd {
			syscall.Close(ls.dirfd)
		}
	}
}

// buffers recycles read buffers: a document is not kept once checked (--fix copies what it keeps).
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// check checks the i-th file of ls: reads it, migrates it with --fix, and validates it.
func (a *Auditor) check(ls listing, i int) Report {
	path, kind := ls.path(i), ls.kind
	r := Report{Path: path, Kind: kind}
	bufp := buffers.Get().(*[]byte)
	defer buffers.Put(bufp)
	// Every byte this check holds is reserved before it is taken (the file's size before it is
	// read, gojsonschema's cost before it decodes), and given back when the check is done.
	var held int64
	reserve := func(n int64) error {
		a.budget.Acquire(i, held, n)
		held += n
		return nil
	}
	defer func() { a.budget.Release(held) }()
	doc, err := readDoc(ls, i, *bufp, reserve)
	if err == nil && cap(doc) <= 1<<20 {
		*bufp = doc[:0] // keep a grown buffer for the next file, but not a huge one
	}
	if err != nil {
		r.Error = readError(err)
		return r
	}
	source := doc // what the problems' lines and columns are counted in
	if isYAML(path) {
		reserve(yamlCost * int64(len(doc)))
		if doc, err = yamlToJSON(doc); err != nil {
			r.Error, r.NotJSON = "is not valid YAML: "+err.Error(), true
			return r
		}
	}
	var planned []byte
	if a.opts.Fix && (kind == "run" || kind == "result") {
		if doc, planned, err = a.fix(&r, doc, reserve); err != nil {
			r.Error = err.Error()
			return r
		}
	}
	if r.Fixed {
		source = doc // the file as --fix rewrote it
	}
	a.validate(&r, doc, source, planned, reserve)
	return r
}

// readDoc reads the i-th file of ls into buf, bounded by the size its kind may have, reserving
// its bytes.
func readDoc(ls listing, i int, buf []byte, reserve func(int64) error) ([]byte, error) {
	limit := int64(record.MaxSize)
	if isYAML(ls.path(i)) {
		limit = MaxManifestSize
	}
	if ls.dir != "" {
		return record.ReadAt(ls.dirfd, ls.names[i], limit, buf, reserve)
	}
	// A file named on the command line is read where it points: the user chose it.
	doc, err := fsx.ReadFileAt(fsx.Cwd, ls.names[i], limit, buf)
	if err == nil {
		reserve(int64(len(doc)))
	}
	return doc, err
}

// readError is a report's error for a file that could not be read.
func readError(err error) string {
	switch {
	case errors.Is(err, fsx.ErrTooLarge):
		return "cannot be checked: " + err.Error()
	case errors.Is(err, record.ErrLink):
		return "cannot be read: " + err.Error()
	}
	return describe(err)
}

// validate validates doc, a file of r's kind as JSON (source as it is written: the problems'
// lines and columns are counted in it), and planned, what --fix would write, when not nil.
func (a *Auditor) validate(r *Report, doc, source, planned []byte, reserve func(int64) error) {
	admit := func(cost int64) func() {
		reserve(cost)
		return func() {}
	}
	problems, err := a.schemas[r.Kind].ValidateWithin(doc, admit)
	switch {
	case errors.Is(err, schema.ErrNotJSON):
		r.Error, r.NotJSON = "is "+err.Error(), true
		return
	case err != nil: // too many values, or the validator failed
		r.Error = "cannot be checked: " + err.Error()
		return
	}
	if len(problems) > MaxProblems {
		r.MoreProblems = len(problems) - MaxProblems
		problems = append([]schema.Problem(nil), problems[:MaxProblems]...)
	}
	asYAML := isYAML(r.Path)
	if asYAML && len(problems) > 0 {
		reserve(yamlCost * int64(len(source))) // the manifest decoded again, as nodes
	}
	locate(problems, source, asYAML)
	r.Problems = problems
	r.Valid = len(problems) == 0
	if planned != nil {
		after, err := a.schemas[r.Kind].ValidateWithin(planned, admit)
		r.FixWouldMend = err == nil && len(after) == 0
	}
}

func isYAML(path string) bool {
	ext := filepath.Ext(path)
	return ext == ".yaml" || ext == ".yml"
}

// fix migrates a run or result record, writes the result (unless DryRun) after a backup of the
// original, and returns the document to validate. With DryRun that is the one on disk, so the
// verdict (and the summary) says what the file is, not what it would be; planned is what --fix
// would write. A file named <bead>-verify.json among results is verify.sh's
// output and is never rewritten into a result.
func (a *Auditor) fix(r *Report, doc []byte, reserve func(int64) error) (out, planned []byte, err error) {
	if isVerify(filepath.Base(r.Path), r.Kind) {
		return doc, nil, nil
	}
	// A migration holds the record's fields in a map: one of more values than gojsonschema
	// takes is left as it is (and reported as too complex to check).
	if st := schema.Measure(fsx.StripBOM(doc)); st.Values > schema.MaxValues {
		return doc, nil, nil
	} else {
		reserve(migrateCost*int64(st.Values) + 3*int64(len(doc)))
	}
	partner := a.partner(r.Path, r.Kind, doc, reserve)
	def := record.Defaults{Bead: fileBead(r.Path), MaxRetries: a.opts.MaxRetries, StateDir: a.stateRoot(r.Path)}
	var m record.Migration
	if r.Kind == "run" {
		m, err = record.MigrateRun(doc, partner, def)
	} else {
		m, err = record.MigrateResult(doc, partner, def)
	}
	if a.canSetAside(r.Path) && unreadable(r.Kind, doc, m, err) {
		// What no reader can read, even migrated, blocks its bead (dispatch cannot count its
		// attempts): moved out of the way, into the attempts archive, where nothing is lost.
		if a.opts.DryRun {
			r.WouldSetAside = true
			return doc, nil, nil
		}
		return doc, nil, a.setAside(r, reserve)
	}
	if err != nil || len(m.Changes) == 0 {
		return doc, nil, nil // not an object, or nothing missing: validation says the rest
	}
	if a.opts.DryRun {
		r.Changes = m.Changes
		return doc, m.Output, nil
	}
	// The rewrite is a read-modify-write: under the record's lock (dispatch holds it while it
	// writes), the file is read again and migrated again, so no write made meanwhile is lost.
	unlock, err := a.lockRecord(r.Path, r.Kind, 10*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("was not fixed: %v", err)
	}
	defer unlock()
	if doc, err = record.ReadAt(fsx.Cwd, r.Path, record.MaxSize, nil, reserve); err != nil {
		return nil, nil, fmt.Errorf("was not fixed: %v", err)
	}
	if r.Kind == "run" {
		m, err = record.MigrateRun(doc, partner, def)
	} else {
		m, err = record.MigrateResult(doc, partner, def)
	}
	if err != nil || len(m.Changes) == 0 {
		return doc, nil, nil
	}
	if len(m.Output) > record.MaxSize {
		// prompt_full copied from a long prompt: a record no tool would read any more.
		return nil, nil, fmt.Errorf("was not fixed: the fixed record would be %s, over the %s every reader takes",
			fsx.HumanBytes(int64(len(m.Output))), fsx.HumanBytes(record.MaxSize))
	}
	backup, err := writeBackup(r.Path, doc)
	if err != nil {
		return nil, nil, fmt.Errorf("was not fixed: %v", err)
	}
	if err := fsx.WriteFileAtomic(r.Path, m.Output, 0o600); err != nil {
		// The file is as it was: the backup of it would only push the next one to .bak.1.
		os.Remove(backup)
		return nil, nil, fmt.Errorf("was not fixed: %v", err)
	}
	r.Changes, r.Backup, r.Fixed = m.Changes, backup, true
	return m.Output, nil, nil
}

// unreadable reports whether a record of kind, doc, migrated as m (or failing to migrate, err),
// is one no reader of the records can read: not a JSON object, or a field of the wrong type
// (record.DecodeRun's verdict).
func unreadable(kind string, doc []byte, m record.Migration, err error) bool {
	if err != nil {
		return true
	}
	if m.Output != nil {
		doc = m.Output
	}
	if kind == "run" {
		_, err = record.DecodeRun(doc)
	} else {
		_, err = record.DecodeResult(doc)
	}
	return err != nil
}

// canSetAside reports whether the record at path can be set aside: it sits in a runs/ or
// results/ directory of a state directory (whose attempts archive takes it), under a name that
// is a bead id. Anything else is left where it is, reported.
func (a *Auditor) canSetAside(path string) bool {
	return KindFromPath(path) != "" && record.CheckBead(fileBead(path)) == nil
}

// setAside moves the record of r, which no reader can read, into its state directory's
// attempts archive (record.SetAside), under the record's lock, having read it again under it:
// a record a writer mended meanwhile stays.
func (a *Auditor) setAside(r *Report, reserve func(int64) error) error {
	unlock, err := a.lockRecord(r.Path, r.Kind, 10*time.Second)
	if err != nil {
		return fmt.Errorf("was not set aside: %v", err)
	}
	defer unlock()
	doc, err := record.ReadAt(fsx.Cwd, r.Path, record.MaxSize, nil, reserve)
	if err != nil {
		return fmt.Errorf("was not set aside: %v", err)
	}
	var m record.Migration
	if r.Kind == "run" {
		m, err = record.MigrateRun(doc, nil, record.Defaults{Bead: fileBead(r.Path), MaxRetries: a.opts.MaxRetries})
	} else {
		m, err = record.MigrateResult(doc, nil, record.Defaults{Bead: fileBead(r.Path), MaxRetries: a.opts.MaxRetries})
	}
	if !unreadable(r.Kind, doc, m, err) {
		return nil // mended meanwhile: the next --fix migrates it
	}
	if fi, err := os.Lstat(r.Path); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("was not set aside: it is not a regular file")
	}
	state := statedir.Dir{Root: filepath.Dir(filepath.Dir(r.Path))}
	aside, err := record.SetAside(state, record.Kind(r.Kind), fileBead(r.Path), r.Path, time.Now())
	if err != nil {
		return fmt.Errorf("was not set aside: %v", err)
	}
	r.SetAside = aside.Path
	return nil
}

// partner reads the other record of the same bead: results/<bead>.json beside a runs directory
// (or under the state directory), and the other way round. nil when there is none.
func (a *Auditor) partner(path, kind string, doc []byte, reserve func(int64) error) []byte {
	var head struct {
		Bead string `json:"bead"`
	}
	json.Unmarshal(fsx.StripBOM(doc), &head) // unknown keys are skipped, not kept
	bead := head.Bead
	if record.CheckBead(bead) != nil {
		bead = fileBead(path)
	}
	state := statedir.Dir{Root: a.stateRoot(path)}
	other := state.Result(bead)
	if kind == "result" {
		other = state.Run(bead)
	}
	b, err := record.ReadAt(fsx.Cwd, other, record.MaxSize, nil, reserve)
	if err != nil {
		return nil
	}
	// The migration decodes it into a map: one with more values than a record could hold is
	// no partner.
	st := schema.Measure(fsx.StripBOM(b))
	if st.Values > schema.MaxValues {
		return nil
	}
	reserve(migrateCost * int64(st.Values))
	return b
}

// stateRoot is the state directory a record file belongs to: the parent of its runs/ or
// results/ directory, else the --state-dir.
func (a *Auditor) stateRoot(path string) string {
	if KindFromPath(path) == "" {
		return a.opts.StateDir
	}
	return filepath.Dir(filepath.Dir(path))
}

// fileBead is the bead id a record's file name gives: state/runs/bd-1.json holds bd-1.
func fileBead(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// writeBackup copies the original to <path>.bak before --fix rewrites it. An existing backup is
// never overwritten: the next free <path>.bak.N is used, so a second fix cannot lose the first
// original. The copy is written to a hidden temporary file, synced, then renamed to its name
// (refusing to replace one): a kill at any moment leaves the whole original under that name, or
// nothing there (the temporary file is removed by the next --fix, see sweep).
func writeBackup(path string, doc []byte) (name string, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+backupTemp+"*")
	if err != nil {
		return "", fmt.Errorf("writing backup: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	_, werr := tmp.Write(doc)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return "", fmt.Errorf("writing backup %s: %w", tmp.Name(), err)
	}
	for n := 0; n < 1000; n++ {
		name = path + ".bak"
		if n > 0 {
			name = fmt.Sprintf("%s.bak.%d", path, n)
		}
		err = renameNoReplace(tmp.Name(), name)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("writing backup %s: %w", name, err)
		}
		syncDir(dir)
		return name, nil
	}
	return "", fmt.Errorf("writing backup: %s.bak.1 to .bak.999 all exist", path)
}

// backupTemp is in the name of a backup's temporary file: .<file>.bak.tmp-<random>.
const backupTemp = ".bak.tmp-"

// renameNoReplace renames from to to, failing with an error satisfying errors.Is(err,
// os.ErrExist) when to exists: renameat2's RENAME_NOREPLACE, or where the file system lacks it,
// a hard link (which never replaces either) and the removal of from.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if err == nil {
		return nil
	}
	if err != unix.EINVAL && err != unix.ENOSYS && err != unix.ENOTSUP {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	if err := os.Link(from, to); err != nil {
		return err
	}
	return os.Remove(from)
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// isLeftover reports whether name, in a directory of records, is a temporary file a write left
// (.<bead>.json.tmp-<n>, fsx.WriteFileAtomic's; .<bead>.json.bak.tmp-<n>, writeBackup's), and
// the record it was for.
func isLeftover(name string) (record string, ok bool) {
	if !strings.HasPrefix(name, ".") {
		return "", false
	}
	for _, sep := range []string{backupTemp, ".tmp-"} {
		if rec, suffix, found := strings.Cut(name[1:], sep); found && suffix != "" && strings.Trim(suffix, "0123456789") == "" &&
			strings.HasSuffix(rec, ".json") {
			return rec, true
		}
	}
	return "", false
}

// sweep removes the temporary files a killed --fix (or a killed writer of records) left in the
// records directory dir. Each is removed under its record's lock, which every writer holds
// while its temporary file exists, so a write in progress is never disturbed: a record whose
// lock is held keeps its temporary files until the next run.
func (a *Auditor) sweep(dir, kind string) {
	names, _ := fsx.Names(dir, func(n string) (string, bool) { _, ok := isLeftover(n); return n, ok })
	for _, name := range names {
		rec, _ := isLeftover(name)
		unlock, err := a.lockRecord(filepath.Join(dir, rec), kind, 100*time.Millisecond)
		if err != nil {
			continue
		}
		os.Remove(filepath.Join(dir, name))
		unlock()
	}
}

// lockRecord takes the lock every writer of the record at path takes (statedir's
// locks/runs/<bead>.lock or locks/results/<bead>.lock, in the state directory the record's runs/
// or results/ directory belongs to), waiting up to wait. A record outside such a directory, or
// whose name is no bead id, has no writer but --fix: it needs no lock.
func (a *Auditor) lockRecord(path, kind string, wait time.Duration) (unlock func(), err error) {
	bead := fileBead(path)
	if KindFromPath(path) == "" || record.CheckBead(bead) != nil {
		return func() {}, nil
	}
	state := statedir.Dir{Root: filepath.Dir(filepath.Dir(path))}
	lock := state.RunLock(bead)
	if kind == "result" {
		lock = state.ResultLock(bead)
	}
	if err := statedir.MkdirFor(lock); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	release, err := fsx.LockFile(ctx, lock)
	if err != nil {
		return nil, err
	}
	return func() { release() }, nil
}

// locate sets each problem's Line and Col: where in source, the file's bytes, the value its
// pointer names begins (for a field that is missing, its object).
func locate(problems []schema.Problem, source []byte, isYAML bool) {
	if len(problems) == 0 {
		return
	}
	if isYAML {
		var root yaml.Node
		if yaml.Unmarshal(source, &root) != nil {
			return
		}
		for i := range problems {
			if n := yamlLocate(&root, problems[i].Pointer); n != nil {
				problems[i].Line, problems[i].Col = n.Line, n.Column
			}
		}
		return
	}
	doc := fsx.StripBOM(source) // editors count no BOM
	for i := range problems {
		if off, ok := schema.Locate(doc, problems[i].Pointer); ok {
			problems[i].Line, problems[i].Col = schema.Position(doc, off)
		}
	}
}

// yamlLocate returns the node of a YAML document the JSON pointer names, or its nearest
// ancestor the document holds.
func yamlLocate(n *yaml.Node, pointer string) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if pointer == "" {
		return n
	}
	for _, token := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		token = strings.NewReplacer("~1", "/", "~0", "~").Replace(token)
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == token {
					next = n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			if k, err := strconv.Atoi(token); err == nil && k >= 0 && k < len(n.Content) {
				next = n.Content[k]
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// yamlToJSON converts a YAML document (a work.yaml manifest) into the JSON it stands for.
func yamlToJSON(doc []byte) ([]byte, error) {
	var v any
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Tally counts passed and failed files per kind.
type Tally map[string]*Count

// Count is the files of one kind that passed and failed.
type Count struct {
	Passed int `json:"passed"`
	Failed int `json:"failed"`
}

// Add counts a report.
func (t Tally) Add(r Report) {
	c := t[r.Kind]
	if c == nil {
		c = &Count{}
		t[r.Kind] = c
	}
	if r.Valid {
		c.Passed++
	} else {
		c.Failed++
	}
}

// Failed is the number of files that failed, over all kinds.
func (t Tally) Failed() int {
	n := 0
	for _, c := range t {
		n += c.Failed
	}
	return n
}

// SortedKinds returns the kinds counted, in the order of Kinds.
func (t Tally) SortedKinds() []string {
	var ks []string
	for k := range t {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return kindIndex(ks[i]) < kindIndex(ks[j]) })
	return ks
}

func kindIndex(k string) int {
	for i, v := range Kinds {
		if v == k {
			return i
		}
	}
	return len(Kinds)
}
