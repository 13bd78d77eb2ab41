package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ordered"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
)

// ErrNoStateDir is returned by Scan when the state directory does not exist.
var ErrNoStateDir = errors.New("state directory not found")

// Source is a state directory read as merged beads: runs/<bead>.json with results/<bead>.json,
// results/<bead>-verify.json as the bead's verification, and with Attempts the earlier attempts
// kept in attempts/<bead>/.
type Source struct {
	Dir      string
	Attempts bool // also read attempts/<bead>/ (see readAttempts)
	Raw      bool // keep each bead's raw_data element (Bead.Raw)
	// Workers is how many entries are read and decoded at once; 0 means four per P
	// (GOMAXPROCS), because much of the work is system calls that block.
	Workers int
	// Cache, when not nil, is where Scan takes the beads of the record pairs that did not change
	// since it was last brought up to date, and which it brings up to date (see Cache). It is
	// not used with Raw: the raw_data elements are the records themselves.
	Cache *Cache
	// Merge, when not nil, says the caller counts every bead in an Aggregator, nothing else:
	// Scan may then hand it, rather than each bead to emit, the totals the cache holds for a
	// chunk of record pairs whose files did not change (see chunk.go). Leave it nil when beads
	// are filtered or written out one by one.
	Merge func(*Aggregator)
}

// paths is the layout of the state directory.
func (s Source) paths() statedir.Dir { return statedir.Dir{Root: s.Dir} }

// entry is one bead name of the directory listings, with the files it has.
type entry struct {
	name                             string
	run, result, verify, hasAttempts bool
}

// Skipped is a record file that could not be read or decoded: the report goes on without it.
type Skipped struct {
	Path string
	Err  error
}

// batch is what reading one entry yields: its beads (the current run and any earlier
// attempts) and the files that had to be skipped.
type batch struct {
	beads   []*Bead
	skipped []Skipped
	held    int64 // bytes of the budget held until the batch is emitted
	cache   cacheOp
	ids     fileIDs // through the cache: the identities of the files the bead is of
}

// memoryBudget bounds the bytes the readers other than the head hold at once: the records they
// read and what is built from them until their batch is emitted. The head (the next batch to
// emit) never waits, so the most held is the budget and one bead (maxBeadBytes).
const memoryBudget = 64 << 20

// maxBeadBytes bounds the record files read for one bead: its run, result and verification
// (16 MiB each at most) and as many of its earlier attempts as fit. An attempt's file beyond it
// is skipped with a warning, unread.
const maxBeadBytes = 64 << 20

// Costs of a file read, in bytes of memory per byte of it: a run with its raw_data element
// (the document, its compact copy, the merged one and the indented one that is kept), a run
// without, and any other record.
const (
	costRunRaw = 4
	costRun    = 2
	costOther  = 2
)

// errBeadTooLarge is a file left unread because its bead's records are over maxBeadBytes.
var errBeadTooLarge = fmt.Errorf("left out unread: the bead's records are over %d MiB", maxBeadBytes>>20)

// reservation is what reading one bead holds of the budget.
type reservation struct {
	budget    *record.Budget
	seq       int
	held      int64
	beadBytes int64
}

// reserve returns ReadAt's reserve function for a file costing cost bytes per byte of it.
func (r *reservation) reserve(cost int64) func(size int64) error {
	return func(size int64) error {
		if r.beadBytes > 0 && r.beadBytes+size > maxBeadBytes {
			return errBeadTooLarge
		}
		r.beadBytes += size
		r.budget.Acquire(r.seq, r.held, cost*size)
		r.held += cost * size
		return nil
	}
}

// Scan reads every bead and calls emit with each in bead order (within a bead, earlier attempts
// first), and skip with each file it could not read. Both are called from the calling
// goroutine, one at a time, so they need no locking. Files are read in parallel but never more
// than a small window of beads is held at once, so memory does not grow with the number of
// records, only the sorted listing of their names does.
//
// A run without a result counts as running; a result without a run is not counted (as in the
// original, which joined results to runs). A bead whose run or result cannot be read is left out
// whole, its file reported to skip.
func (s Source) Scan(emit func(*Bead), skip func(Skipped)) error {
	return s.scan(record.NewBudget(memoryBudget), emit, skip)
}

// scan is Scan with the readers' budget given (a test looks at what is left held after).
func (s Source) scan(budget *record.Budget, emit func(*Bead), skip func(Skipped)) error {
	entries, err := s.list()
	if err != nil {
		return err
	}
	workers := s.Workers
	if workers <= 0 {
		workers = 4 * runtime.GOMAXPROCS(0)
	}
	// The two directories are opened once and each file read by its name in them, so the kernel
	// resolves one path component per file rather than the whole state directory path.
	var fds dirs
	if fds.runs, err = openDir(s.paths().Runs()); err != nil {
		return err
	}
	defer closeDir(fds.runs)
	if fds.results, err = openDir(s.paths().Results()); err != nil {
		return err
	}
	defer closeDir(fds.results)
	var cr *cacheRun
	if s.Cache != nil {
		cr = s.Cache.begin(s, entries)
	}
	budget.SetHead(0)
	if !s.Raw {
		s.scanChunks(entries, workers, fds, cr, budget, emit, skip)
		if cr != nil {
			cr.finish()
		}
		return nil
	}
	ordered.Map(len(entries), workers, 4*workers, func(i int) batch {
		res := &reservation{budget: budget, seq: i}
		if cr != nil {
			return cr.read(s, fds, entries[i], i, res, new([]byte), nil, nil)
		}
		return s.read(fds, entries[i], res, nil)
	}, func(i int, b batch) {
		budget.Release(b.held)
		budget.SetHead(i + 1)
		if cr != nil {
			cr.note(i, entries[i], b)
		}
		for _, sk := range b.skipped {
			skip(sk)
		}
		for _, bd := range b.beads {
			emit(bd)
		}
	})
	if cr != nil {
		cr.finish()
	}
	return nil
}

// chunkOut is what reading one chunk of entries yields: its entries' batches, or with
// Source.Merge its totals from the cache; and what the cache is to keep of the chunk. With
// Source.Merge, a chunk read pair by pair whose new totals the cache is to keep has them in
// totals as well as its batches: they are merged, and the batches' beads not emitted.
type chunkOut struct {
	batches []batch
	totals  *Aggregator
	op      cacheOp
}

// scanChunks is scan without Raw: the entries in jobs of one chunk each (chunkStarts): an entry
// taken from the cache is a fstatat or three and a decoding of a few hundred bytes, and handing
// each to a worker and back on its own cost more than that (issue 22); through the cache, an
// unchanged chunk is added as its totals. A bead read without Raw keeps nothing of its records
// but a few clipped strings, so each entry's reservation is given back as soon as it is read
// rather than held until it is emitted: the budget bounds the bytes being read at once, and a
// job's beads are a few hundred bytes each.
func (s Source) scanChunks(entries []entry, workers int, fds dirs, cr *cacheRun, budget *record.Budget, emit func(*Bead), skip func(Skipped)) {
	cs := &chunkScan{s: s, entries: entries, fds: fds, cr: cr, budget: budget, emit: emit, skip: skip}
	if cr != nil {
		cs.starts = cr.starts
	} else {
		cs.starts = chunkStarts(entries, defaultChunkBits)
	}
	ordered.Map(len(cs.starts), workers, 2*workers, cs.read, cs.yield)
}

// chunkScan is one scanChunks: what its workers read chunks with (read) and what the calling
// goroutine hands their beads on with (yield).
type chunkScan struct {
	s       Source
	entries []entry
	starts  []int // the first entry of each chunk
	fds     dirs
	cr      *cacheRun // nil without a cache
	budget  *record.Budget
	emit    func(*Bead)
	skip    func(Skipped)
}

// bounds returns the entries of chunk c, entries[lo:hi].
func (cs *chunkScan) bounds(c int) (lo, hi int) {
	if c+1 < len(cs.starts) {
		return cs.starts[c], cs.starts[c+1]
	}
	return cs.starts[c], len(cs.entries)
}

// read reads chunk c, on a worker: as its totals from the cache when Source.Merge may take
// them and none of its files changed, else entry by entry.
func (cs *chunkScan) read(c int) chunkOut {
	cr := cs.cr
	lo, hi := cs.bounds(c)
	var scratch []byte
	var pre []statted
	if cr != nil && cr.merge {
		pre = make([]statted, hi-lo)
		if totals := cr.sum(cs.fds, c, lo, hi, pre, &scratch); totals != nil {
			return chunkOut{totals: totals, op: cacheOp{kind: opKeep}}
		}
	}
	out := chunkOut{batches: cs.readEntries(c, lo, hi, pre, &scratch)}
	if cr != nil {
		var totals *Aggregator
		out.op, totals = cr.chunkOp(c, lo, hi, out.batches)
		if cs.s.Merge != nil && out.op.kind == opPut {
			// Counted here, on the worker, once: the emitting goroutine only merges them
			// (a first run, which builds the cache, counted each bead twice, 2.5% of its CPU).
			out.totals = totals
		}
	}
	return out
}

// readEntries reads entries[lo:hi] of chunk c one by one, through the cache if there is one
// (pre holds what cacheRun.sum already learnt of them, or is nil), giving each entry's
// reservation back as soon as it is read.
func (cs *chunkScan) readEntries(c, lo, hi int, pre []statted, scratch *[]byte) []batch {
	batches := make([]batch, hi-lo)
	slab := cs.slab(lo, hi)
	for i := lo; i < hi; i++ {
		res := &reservation{budget: cs.budget, seq: c}
		if cs.cr != nil {
			var p *statted
			if pre != nil {
				p = &pre[i-lo]
			}
			batches[i-lo] = cs.cr.read(cs.s, cs.fds, cs.entries[i], i, res, scratch, p, slab)
		} else {
			batches[i-lo] = cs.s.read(cs.fds, cs.entries[i], res, nil)
		}
		cs.budget.Release(batches[i-lo].held)
		batches[i-lo].held = 0
	}
	return batches
}

// slab returns one allocation for the beads of entries[lo:hi] the cache holds, when the cache
// lets its beads be reused, else nil.
func (cs *chunkScan) slab(lo, hi int) *beadSlab {
	cr := cs.cr
	if cr == nil || cr.cached == nil || !cr.reuse {
		return nil
	}
	n := 0
	for i := lo; i < hi; i++ {
		if cr.cached[i] != nil {
			n++
		}
	}
	return newBeadSlab(n)
}

// yield hands chunk c on, in chunk order on the calling goroutine: its totals to Source.Merge
// or its beads to emit, its unreadable files to skip, and what the cache is to keep of it.
func (cs *chunkScan) yield(c int, o chunkOut) {
	cr := cs.cr
	cs.budget.SetHead(c + 1)
	lo, hi := cs.bounds(c)
	if cr != nil && lo/releaseEvery != hi/releaseEvery {
		cr.release()
	}
	if o.totals != nil {
		cs.s.Merge(o.totals)
	}
	if o.totals != nil && o.batches == nil {
		cs.noteSummed(lo, hi)
	}
	for k, b := range o.batches {
		if cr != nil {
			cr.note(lo+k, cs.entries[lo+k], b)
		}
		for _, sk := range b.skipped {
			cs.skip(sk)
		}
		if o.totals != nil {
			continue // counted in them
		}
		for _, bd := range b.beads {
			cs.emit(bd)
		}
	}
	if cr != nil {
		cr.noteChunk(c, o.op)
	}
}

// noteSummed tells the cache about entries[lo:hi], a chunk added as its cached totals: every
// bead with a run is kept as it is, the rest dropped.
func (cs *chunkScan) noteSummed(lo, hi int) {
	for i := lo; i < hi; i++ {
		op := cacheOp{kind: opDrop}
		if cs.entries[i].run {
			op.kind = opKeep
			cs.cr.c.Stats.Summed++
		}
		cs.cr.note(i, cs.entries[i], batch{cache: op})
	}
}

// dirs are the open runs/ and results/ directories (-1 for one that does not exist).
type dirs struct{ runs, results int }

func openDir(path string) (int, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

func closeDir(fd int) {
	if fd >= 0 {
		syscall.Close(fd)
	}
}

// list returns the sorted union of the bead names in runs/, results/ and (with Attempts)
// attempts/.
func (s Source) list() ([]entry, error) {
	fi, err := os.Stat(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoStateDir, s.Dir)
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("state directory %s is not a directory", s.Dir)
	}
	// The two listings (a million names each, read and sorted) are made at once, on two cores.
	var results []string
	var resultsErr error
	listed := make(chan struct{})
	go func() {
		defer close(listed)
		results, resultsErr = recordNames(s.paths().Results())
	}()
	runs, err := recordNames(s.paths().Runs())
	<-listed
	if err != nil {
		return nil, err
	}
	if resultsErr != nil {
		return nil, resultsErr
	}
	entries := make([]entry, 0, len(runs))
	for _, n := range runs {
		entries = append(entries, entry{name: n, run: true})
	}
	// results/<bead>-verify.json is the verification output dispatch leaves beside a result. The
	// original read these files as results, and whichever came last replaced the real result.
	var verifies []string
	results = slices.DeleteFunc(results, func(n string) bool {
		if base, ok := statedir.VerifyBead(n); ok {
			verifies = append(verifies, base)
			return true
		}
		return false
	})
	// Sorted again: "a-b-verify" sorts before "a-verify", but "a" before "a-b".
	slices.Sort(verifies)
	entries = union(entries, results, func(e *entry) { e.result = true })
	entries = union(entries, verifies, func(e *entry) { e.verify = true })
	if s.Attempts {
		dirs, err := subdirs(s.paths().Attempts())
		if err != nil {
			return nil, err
		}
		entries = union(entries, dirs, func(e *entry) { e.hasAttempts = true })
	}
	return entries, nil
}

// recordNames lists a directory's *.json files, without the extension, sorted (the names of
// statedir.RecordBead, listed without a string each: fsx.SuffixNames). A missing directory has
// none: the original read it as empty. Hidden names are skipped: they are the temporary files
// of writes in progress; so are the <bead>.json.lock sidecars older writers left.
func recordNames(dir string) ([]string, error) {
	list, err := fsx.SuffixNames(dir, recordFileSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	return list, nil
}

// subdirs lists a directory's subdirectories (not hidden), sorted; none when it is missing.
func subdirs(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var list []string
	for _, de := range des {
		if de.IsDir() && !strings.HasPrefix(de.Name(), ".") {
			list = append(list, de.Name())
		}
	}
	return list, nil
}

// union merges the sorted names into the sorted entries, marking each with set (which may be
// called twice for one entry).
func union(entries []entry, names []string, set func(*entry)) []entry {
	if len(names) == 0 {
		return entries
	}
	// The usual case: every name is an entry's already (each result has its run), so the
	// entries are marked where they are, rather than copied (24 MB for a million).
	i := 0
	for _, n := range names {
		for i < len(entries) && entries[i].name != n && entries[i].name < n {
			i++
		}
		if i == len(entries) || entries[i].name != n {
			return unionNew(entries, names, set)
		}
		set(&entries[i])
		i++
	}
	return entries
}

// unionNew is union into a new slice, for names some entries do not have.
func unionNew(entries []entry, names []string, set func(*entry)) []entry {
	out := make([]entry, 0, max(len(entries), len(names)))
	i, j := 0, 0
	for i < len(entries) || j < len(names) {
		switch {
		case i < len(entries) && j < len(names) && entries[i].name == names[j]: // the usual case first
			set(&entries[i])
			out = append(out, entries[i])
			i++
			j++
		case j == len(names) || (i < len(entries) && entries[i].name < names[j]):
			out = append(out, entries[i])
			i++
		default: // names[j] alone
			e := entry{name: names[j]}
			set(&e)
			out = append(out, e)
			j++
		}
	}
	return out
}

// buffers are the read buffers of one entry's run and result, reused from entry to entry: the
// decoded records copy what they keep, and the raw_data element is built before they go back.
type buffers struct{ run, result []byte }

// maxKeptBuffer is the largest buffer kept for the next entry: records are a few kilobytes, and
// one huge prompt must not keep its megabytes pinned in the pool.
const maxKeptBuffer = 1 << 20

var bufferPool = sync.Pool{New: func() any { return &buffers{make([]byte, 0, 16<<10), make([]byte, 0, 16<<10)} }}

// read reads one entry's files and merges them, each file's cost reserved in res before it is
// read (and held until the batch is emitted).
func (s Source) read(fds dirs, e entry, res *reservation, ids *fileIDs) (out batch) {
	// out is named so that this deferred assignment is what read returns: with an unnamed result
	// it set a copy, every batch was emitted holding nothing, the budget was never given back,
	// and once 64 MiB had been read only the head could read (issue 22: 1.13 cores, not 1.75).
	defer func() { out.held = res.held }()
	fail := func(path string, err error) {
		out.skipped = append(out.skipped, Skipped{path, err})
	}
	var current *Bead
	if e.run {
		bufs := bufferPool.Get().(*buffers)
		current = s.readCurrent(fds, e, bufs, res, fail, ids)
		bufferPool.Put(bufs)
	}
	if s.Attempts && e.hasAttempts {
		out.beads = s.readAttempts(e.name, current, res, fail)
	}
	if current != nil {
		out.beads = append(out.beads, current)
		// Keep the bead's beads in attempt order wherever the current one falls (a legacy run
		// with no attempt number is the latest).
		slices.SortStableFunc(out.beads, func(a, b *Bead) int { return order(a) - order(b) })
	}
	return out
}

// fileIDs are the versions of the files a bead was read from, for the cache: its run, its
// result (when the listing has one) and its verification (when it has one). other says the
// result was looked for under another name (the run's bead field), which the cache does not
// follow.
type fileIDs struct {
	run, result, verify record.FileID
	other               bool
}

// readCurrent reads a bead's run, its result and its verification, and when ids is not nil
// notes the versions of the files it read there.
func (s Source) readCurrent(fds dirs, e entry, bufs *buffers, res *reservation, fail func(string, error), ids *fileIDs) *Bead {
	if ids == nil {
		ids = &fileIDs{}
	}
	runPath := func() string { return s.paths().Run(e.name) }
	runDoc, runID, err := record.ReadAtID(fds.runs, statedir.RecordFile(e.name), record.MaxSize, bufs.run, res.reserve(s.runCost()))
	ids.run = runID
	if err == nil && cap(runDoc) <= maxKeptBuffer {
		bufs.run = runDoc[:0]
	}
	if err != nil {
		fail(runPath(), err)
		return nil
	}
	run, err := record.DecodeRun(runDoc)
	if err != nil {
		fail(runPath(), err)
		return nil
	}
	// The original joined by the records' bead field; the file names agree with it in every
	// state directory dispatch writes, but a run saved under another name still finds its result.
	resName, hasRes := e.name, e.result
	if run.Bead != "" && run.Bead != e.name && record.CheckBead(run.Bead) == nil {
		resName, hasRes = run.Bead, true
		ids.other = true
	}
	var result *record.Result
	if hasRes && fds.results >= 0 {
		resPath := func() string { return s.paths().Result(resName) }
		doc, resID, err := record.ReadAtID(fds.results, statedir.RecordFile(resName), record.MaxSize, bufs.result, res.reserve(costOther))
		ids.result = resID
		if err == nil && cap(doc) <= maxKeptBuffer {
			bufs.result = doc[:0]
		}
		switch {
		case err != nil && errors.Is(err, fs.ErrNotExist) && resName != e.name:
			// No result under the bead's own name either: a run without a result.
		case err != nil:
			fail(resPath(), err)
			return nil
		default:
			if result, err = record.DecodeResult(doc); err != nil {
				fail(resPath(), err)
				return nil
			}
		}
	}
	var verify json.RawMessage
	if e.verify {
		path := s.paths().Verify(e.name)
		if verify, ids.verify, err = readObject(fds.results, filepath.Base(path), path, res); err != nil {
			fail(path, err)
		}
	}
	b := newBead(e.name, run, result)
	s.finish(b, runDoc, result, verify, fail, runPath)
	return b
}

// runCost is what reading a run costs per byte of it.
func (s Source) runCost() int64 {
	if s.Raw {
		return costRunRaw
	}
	return costRun
}

// finish adds the verification and the raw_data element to a merged bead.
func (s Source) finish(b *Bead, runDoc []byte, res *record.Result, verify json.RawMessage, fail func(string, error), path func() string) {
	if verify != nil {
		var v struct {
			Overall      string `json:"overall"`
			Verification *struct {
				Overall string `json:"overall"`
			} `json:"verification"`
		}
		if json.Unmarshal(verify, &v) == nil {
			// A verify file holds the verification object itself, or a document with one.
			if v.Overall == "" && v.Verification != nil {
				v.Overall = v.Verification.Overall
			}
			if v.Overall != "" {
				b.Verified = clipText(v.Overall)
			}
		}
	}
	if s.Raw {
		raw, err := rawData(runDoc, res, verify)
		if err != nil {
			// DecodeRun read the document, so this is not expected; say so rather than lose it.
			fail(path(), err)
			return
		}
		b.Raw = raw
	}
}

// readObject reads a JSON object, the file name in the open directory dirfd (fsx.Cwd: name is
// its path), and returns it compact, with the version of the file it was.
func readObject(dirfd int, name, path string, res *reservation) (json.RawMessage, record.FileID, error) {
	doc, id, err := record.ReadAtID(dirfd, name, record.MaxSize, nil, res.reserve(costOther))
	if err != nil {
		if dirfd != fsx.Cwd {
			err = relabel(err, name, path)
		}
		return nil, id, err
	}
	doc = bytes.TrimSpace(fsx.StripBOM(doc))
	if len(doc) == 0 || doc[0] != '{' {
		return nil, id, errors.New("not a JSON object")
	}
	var c bytes.Buffer
	if err := json.Compact(&c, doc); err != nil {
		return nil, id, err
	}
	return c.Bytes(), id, nil
}

// relabel gives a PathError about name the path the report names the file by, as the error of
// a read by path would have.
func relabel(err error, name, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == name {
		return &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
	}
	return err
}

// readAttempts reads the earlier attempts of a bead kept in attempts/<bead>/. Each *.json file
// there is a record of one attempt: a name containing "result" is a result record, one
// containing "verify" a verification, anything else a run record (so run-1.json and
// result-1.json, or 1.run.json and 1.result.json, both work). Records pair up by their attempt
// field, else by the number in their file name. An attempt that is also the bead's current one
// (in runs/) is not counted twice, and a result with no run is left out, as in runs/.
func (s Source) readAttempts(bead string, current *Bead, res *reservation, fail func(string, error)) []*Bead {
	dir := s.paths().AttemptDir(bead)
	files, err := recordNames(dir)
	if err != nil {
		fail(dir, err)
		return nil
	}
	type attempt struct {
		runDoc []byte
		run    *record.Run
		res    *record.Result
		verify json.RawMessage
		path   string
	}
	byNumber := map[int]*attempt{}
	get := func(n int) *attempt {
		if byNumber[n] == nil {
			byNumber[n] = &attempt{}
		}
		return byNumber[n]
	}
	for _, name := range files {
		path := filepath.Join(dir, name+".json")
		fileNumber := numberIn(name)
		switch lower := strings.ToLower(name); {
		case strings.Contains(lower, "verify"):
			v, _, err := readObject(fsx.Cwd, path, path, res)
			if err != nil {
				fail(path, err)
				continue
			}
			get(fileNumber).verify = v
		case strings.Contains(lower, "result"):
			doc, err := record.ReadAt(fsx.Cwd, path, record.MaxSize, nil, res.reserve(costOther))
			if err == nil {
				var res *record.Result
				if res, err = record.DecodeResult(doc); err == nil {
					get(pick(res.Attempt, fileNumber)).res = res
					continue
				}
			}
			fail(path, err)
		default:
			doc, err := record.ReadAt(fsx.Cwd, path, record.MaxSize, nil, res.reserve(s.runCost()))
			if err == nil {
				var run *record.Run
				if run, err = record.DecodeRun(doc); err == nil {
					a := get(pick(run.Attempt, fileNumber))
					a.run, a.runDoc, a.path = run, doc, path
					continue
				}
			}
			fail(path, err)
		}
	}
	var out []*Bead
	for n, a := range byNumber {
		if a.run == nil || (current != nil && current.Attempt == n) {
			continue
		}
		b := newBead(bead, a.run, a.res)
		if b.Attempt == 0 {
			b.Attempt = n
		}
		s.finish(b, a.runDoc, a.res, a.verify, fail, func() string { return a.path })
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *Bead) int { return a.Attempt - b.Attempt })
	return out
}

func order(b *Bead) int {
	if b.Attempt > 0 {
		return b.Attempt
	}
	return math.MaxInt
}

// pick is the record's own attempt number when it has one, else the file name's.
func pick(field, fromName int) int {
	if field > 0 {
		return field
	}
	return fromName
}

// numberIn is the first run of digits in a file name (0 when there is none).
func numberIn(name string) int {
	start := strings.IndexAny(name, "0123456789")
	if start < 0 {
		return 0
	}
	end := start
	for end < len(name) && name[end] >= '0' && name[end] <= '9' {
		end++
	}
	n, _ := strconv.Atoi(name[start:end])
	return n
}
