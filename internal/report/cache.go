package report

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// cacheFormat is the version of what the cache holds per record pair (encodeEntry). Bump it
// whenever a Bead gains, loses or changes a field, or newBead derives one otherwise: a cache of
// another format is rebuilt from the records. TestCacheFormatFollowsBead keeps it honest.
const cacheFormat = 2

// DefaultCacheFresh is Cache.Fresh unless set: a record pair whose files changed less than this
// before the scan began is read again next time rather than cached. A file system's clock ticks
// in milliseconds, so an edit in place in the same tick as the read, of the same size, would
// leave the file's identity as it was: the cache must not have seen it yet.
const DefaultCacheFresh = time.Second

// Cache is analyze-runs' incremental cache: per record pair, what the report needs of it (its
// Bead, without Raw) and the identity of the files it was read from (record.FileID: inode,
// size, modification and change times). A scan through it reads only the pairs whose files'
// identities changed, were added or went away, found from the directory listing the scan makes
// anyway and one fstatat(2) per file; the others' beads come from the cache.
//
// It is never the source of truth: it is rebuilt from the records when it is missing, cannot be
// read, was written by another format or Stamp, or on Rebuild; any problem with it means a
// scan without it, never an error. It is an embedded bbolt database (one file, transactions,
// copy-on-write B+tree) under the state directory's cache/, with the records' rules: no link
// followed, opened only if it is a regular file owned by this user, 0600, of a bounded size,
// each entry decoded with bounds. It is brought up to date in one transaction at the end of the
// scan, or when rebuilt written whole to a new file renamed into place: a run killed at any
// point leaves the cache as it was or as it was written whole.
//
// Not cached, so read every time: a pair with a file that could not be read, a run whose result
// is found under another name, a bead with earlier attempts when Source.Attempts is set, and a
// pair changed less than Fresh before the scan.
type Cache struct {
	Path    string        // the database: statedir.Dir.ReportCache
	Stamp   string        // who writes it (the tool and its version): another's is rebuilt
	Rebuild bool          // rebuild it from the records whatever it holds
	Verify  bool          // read every record, report where the cache differs, and rebuild it
	Fresh   time.Duration // see DefaultCacheFresh; NewCache sets it
	// Reusing, when set, is called when a scan is about to take beads from the cache as it was,
	// with the number of record pairs listed; the function it returns is called when the scan
	// ends. It is where the main tunes the Go runtime for such a scan (a library sets no
	// process-wide setting): the scan holds the listing (about 60 MB for a million pairs, see
	// CacheScanMemory) and makes garbage of every bead it decodes, so that at GOGC's default
	// 100 it collected twenty times, marking the listing each time, and at a higher percent its
	// heap grew to whatever limit it had (issue 22).
	Reusing func(pairs int) (done func())

	// chunkBits sets the chunks' size (chunkStarts); 0 means defaultChunkBits. Tests make
	// chunks small, so that a small history has many.
	chunkBits uint
	// opened, when set, is called once the cache as it was is open and read: a test cuts the
	// file short there, under the scan's map.
	opened func()

	// Stats says what the last Scan did with the cache.
	Stats CacheStats
}

// NewCache returns the cache at path written by stamp.
func NewCache(path, stamp string) *Cache {
	return &Cache{Path: path, Stamp: stamp, Fresh: DefaultCacheFresh}
}

// CacheStats is what a Scan did with its Cache.
type CacheStats struct {
	// Off says why the cache was not used at all ("" when it was); Warn, that this deserves a
	// warning (a link or someone else's file where the cache goes, a failed write), not just a
	// read-only state directory or another analyze-runs holding it.
	Off  string
	Warn bool
	// Rebuilt says why the cache was written anew ("" when it was updated in place).
	Rebuilt string
	// Unreadable says why the cache as it was could not be read ("" when it could, there was
	// none or it was not opened): damaged, cut short, not analyze-runs' cache, a link or
	// another's file where it goes, a page that faulted under the scan. It is then written
	// anew (else Off says why not), and this deserves a warning.
	Unreadable string
	Reused     int // record pairs taken from the cache
	Summed     int // of those, pairs added as their chunk's totals, their entries not decoded
	Read       int // record pairs read from their files
	// Differences are the files, with Verify, whose beads in the cache were not what the files
	// hold though their identities were the same (edited in place, times kept); at most
	// maxDifferences named, Differ counts them all.
	Differences []string
	Differ      int
}

const maxDifferences = 20

// Cache layout: bucket "beads", bead name → entry (encodeEntry); bucket "chunks", the name of
// a chunk's first entry → its digest and totals (chunk.go); bucket "meta", "stamp" → the stamp
// (cacheStamp).
var (
	bucketBeads  = []byte("beads")
	bucketChunks = []byte("chunks")
	bucketMeta   = []byte("meta")
	keyStamp     = []byte("stamp")
)

// memoryPerPair is CacheScanMemory's allowance per record pair: about twice what a scan
// through the cache holds of each (its entry, its name, its cached value's place: about 75
// bytes).
const memoryPerPair = 160

// CacheScanMemory is the memory a scan taking beads from the cache needs for pairs record pairs
// beyond a base of its own: what a main bounding such a scan's heap (Cache.Reusing) allows it.
// A cached million pairs with 1% new scattered, under a limit of 32 MiB plus this, peaked at
// 250 MB, against 300-310 MB with the heap let grow (issue 22).
func CacheScanMemory(pairs int) int64 { return memoryPerPair * int64(pairs) }

// cacheStamp is what a cache must have been written by to be read.
func (c *Cache) stamp() string {
	return fmt.Sprintf("analyze-runs cache format %d, text clipped at %d; %s", cacheFormat, maxText, c.Stamp)
}

// cacheLockWait is how long a scan waits for another analyze-runs to let go of the cache
// before it reads the records without it.
const cacheLockWait = 100 * time.Millisecond

// maxCacheBytes bounds the cache file for n record pairs: an entry is a few hundred bytes, at
// most about 3 KiB (every text clipped), and bbolt's pages are at least half full.
func maxCacheBytes(n int) int64 { return 64<<20 + 8<<10*int64(n) }

// maxPending bounds the changed entries an update in place holds until its transaction: past
// it, the cache is written anew as the scan goes (a first run, or most records changed).
const maxPending = 16 << 20

// rebuildBatch is how many entries a rebuild puts in one of its transactions (the file is
// renamed into place only once all are written, so they need not be one).
const rebuildBatch = 20000

// staleTemp is the age past which a rebuild's temporary file is a leftover of a killed run.
const staleTemp = time.Hour

// tempPrefix begins the names of rebuilds' temporary files, beside the cache.
const tempPrefix = ".analyze-runs.db.tmp-"

// cacheOp is what a batch does to the cache.
type cacheOp struct {
	kind    uint8  // opDrop (nothing to keep), opKeep (the cached entry holds) or opPut
	value   []byte // opPut's entry
	differs bool   // with Verify: the cached entry had the same identities and another bead
}

const (
	opDrop = iota
	opKeep
	opPut
	opLeave // read without the cache, its entry left as it is (still checked when next used)
)

// cacheRun is one scan's use of the cache.
type cacheRun struct {
	c       *Cache
	src     Source
	entries []entry
	failed  bool     // the cache is not written this run
	db      *bolt.DB // the cache as it was, nil when none could be read
	tx      *bolt.Tx // a read transaction over db, open for the scan
	cached  [][]byte // per entry: its value in db (in db's memory map), nil when none
	stale   [][]byte // names in db no longer listed
	reuse   bool     // cached entries whose files did not change are taken as they are
	before  int64    // Fresh before the scan began, in ns: files changed since are not cached
	faulted atomic.Bool
	reused  func() // Cache.Reusing's done, called at the end; nil when not called

	// Chunks: the first entry of each, their values in db (nil when none), the chunk keys in db
	// no longer a chunk's first name, and whether a chunk may be added as its totals.
	starts      []int
	chunkVals   [][]byte
	staleChunks [][]byte
	merge       bool

	// Update in place: the changes, applied at the end in one transaction.
	kinds        []uint8 // per entry emitted: its op's kind
	pending      []pendingPut
	pendingBytes int
	deletes      [][]byte
	chunkKinds   []uint8
	chunkPending []pendingPut // i is the chunk
	chunkDeletes [][]byte
	noted        int // entries noted, in order
	chunksNoted  int // chunks noted, in order

	w *cacheWriter // a rebuild under way, nil while updating in place
}

type pendingPut struct {
	i     int
	value []byte
}

// begin opens the cache for a scan of entries.
func (c *Cache) begin(src Source, entries []entry) *cacheRun {
	c.Stats = CacheStats{}
	if src.Raw {
		c.Stats.Off = "--json reads every record for raw_data"
		return nil
	}
	bits := c.chunkBits
	if bits == 0 {
		bits = defaultChunkBits
	}
	cr := &cacheRun{c: c, src: src, entries: entries, reuse: !c.Rebuild && !c.Verify,
		before: time.Now().Add(-c.Fresh).UnixNano(), kinds: make([]uint8, len(entries)),
		starts: chunkStarts(entries, bits)}
	cr.chunkKinds = make([]uint8, len(cr.starts))
	dir := filepath.Dir(c.Path)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		c.off(err, "cannot make "+dir)
		return nil
	}
	if err := statedir.CheckDir(dir); err != nil {
		c.Stats.Off, c.Stats.Warn = err.Error(), true
		return nil
	}
	removeStaleTemps(dir)
	if !cr.openOld() {
		return nil
	}
	switch {
	case c.Stats.Rebuilt != "":
		cr.reuse = false
	case c.Verify:
		c.Stats.Rebuilt = "--verify-cache"
	case c.Rebuild:
		c.Stats.Rebuilt = "--rebuild-cache"
	}
	if c.Stats.Rebuilt != "" {
		if err := cr.startRebuild(); err != nil {
			cr.close()
			c.off(err, "cannot write it")
			return nil
		}
	}
	cr.merge = cr.reuse && src.Merge != nil && cr.chunkVals != nil
	if cr.reuse && c.Reusing != nil {
		cr.reused = c.Reusing(len(entries))
	}
	return cr
}

// openOld opens the cache as it was and pairs its entries with the scan's, unless it is rebuilt
// whatever it holds: it says whether the scan goes on with the cache (else Stats.Off says why).
//
// --rebuild-cache never opens the old file: it is what a user runs on a cache that crashed or
// misled a run, so nothing of it is read, whatever it is; the new file is renamed over it.
func (cr *cacheRun) openOld() bool {
	c := cr.c
	if c.Rebuild && !c.Verify {
		return true
	}
	db, err := openCache(c.Path, len(cr.entries))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Stats.Rebuilt = "there was none"
	case errors.Is(err, bolt.ErrTimeout):
		c.Stats.Off = "another analyze-runs is using it"
		return false
	case isReadOnly(err):
		c.off(err, "cannot write it")
		return false
	case err != nil:
		c.unreadable(err.Error())
	default:
		cr.db = db
		if why, damaged := cr.load(cr.entries); damaged {
			cr.close()
			c.unreadable(why)
		} else if why != "" {
			cr.close()
			c.Stats.Rebuilt = why
		} else if c.opened != nil {
			c.opened()
		}
	}
	return true
}

// unreadable says the cache as it was could not be read, and why: it is rebuilt.
func (c *Cache) unreadable(why string) {
	c.Stats.Rebuilt, c.Stats.Unreadable = "it could not be read ("+why+")", why
}

// off says the cache is not used because of err: quietly when the state directory is only
// not writable by this user, with a warning otherwise.
func (c *Cache) off(err error, what string) {
	c.Stats.Off = what + ": " + err.Error()
	c.Stats.Warn = !isReadOnly(err)
}

func isReadOnly(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

// openCache opens the cache at path for an update, without following a link, if it is a
// regular file of this user's of at most maxCacheBytes(n) whose meta pages describe it whole
// (checkMetas); fs.ErrNotExist when there is none. bbolt's panics are its errors.
//
// The map is not populated (MAP_POPULATE): its pages would all count in the RSS; a scan maps in
// those it reads and lets them go as it goes (cacheRun.release).
func openCache(path string, n int) (db *bolt.DB, err error) {
	var file *os.File
	// bbolt reads pages through its map as it opens the file (the freelist): a page cut off
	// since checkMetas looked is a fault, which SetPanicOnFault makes a panic rather than the
	// end of the process, and bbolt panics on a page it cannot make sense of. Either is a cache
	// that cannot be read. The file is closed, so that its lock goes; bbolt's map of it is left
	// (address space, not memory) until the process ends.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				file.Close()
			}
			db, err = nil, fmt.Errorf("bbolt failed opening it: %v", r)
		}
	}()
	return bolt.Open(path, 0o600, &bolt.Options{
		Timeout:      cacheLockWait,
		FreelistType: bolt.FreelistMapType,
		OpenFile: func(p string, flag int, _ os.FileMode) (*os.File, error) {
			f, err := openOwn(p, flag&^os.O_CREATE, n)
			if err != nil {
				return nil, err
			}
			// Without O_CREATE an empty file is still one bbolt would make a new database
			// of, quietly: one cut to nothing is as damaged as one cut anywhere else.
			if err := checkOpenCache(f); err != nil {
				f.Close()
				return nil, err
			}
			file = f
			return f, nil
		},
		NoFreelistSync: false,
	})
}

// openOwn opens a cache file as the records' rules read state files: no link followed, nothing
// but a regular file, owned by this user, bounded; made 0600 if it was not.
func openOwn(path string, flag, n int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s: %w", path, record.ErrLink)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file", path)
	case st != nil && int(st.Uid) != os.Geteuid():
		err = fmt.Errorf("%s belongs to uid %d, not to you", path, st.Uid)
	case fi.Size() > maxCacheBytes(n):
		err = fmt.Errorf("%s is %d bytes, over the %d a cache of %d record pairs can be", path, fi.Size(), maxCacheBytes(n), n)
	case fi.Mode().Perm()&0o077 != 0:
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeStaleTemps removes what killed rebuilds left in dir.
func removeStaleTemps(dir string) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), tempPrefix) {
			continue
		}
		if fi, err := de.Info(); err == nil && time.Since(fi.ModTime()) > staleTemp {
			os.Remove(filepath.Join(dir, de.Name()))
		}
	}
}

// load checks the cache's stamp and pairs its entries with the listing's; it returns why the
// cache cannot be used, "" when it can, and whether that is because it cannot be read (rather
// than that it is of another version). bbolt panics on a page it cannot make sense of, and a
// file cut short under its memory map faults (made a panic by SetPanicOnFault, on this
// goroutine, which reads the map): either is a cache that cannot be read.
func (cr *cacheRun) load(entries []entry) (why string, damaged bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			why, damaged = fmt.Sprintf("bbolt failed reading it: %v", r), true
		}
	}()
	tx, err := cr.db.Begin(false)
	if err != nil {
		return err.Error(), true
	}
	cr.tx = tx
	meta, beads, chunks := tx.Bucket(bucketMeta), tx.Bucket(bucketBeads), tx.Bucket(bucketChunks)
	if meta == nil || beads == nil || chunks == nil {
		return "it is not analyze-runs' cache", true // a bbolt file of another program's
	}
	if got := meta.Get(keyStamp); string(got) != cr.c.stamp() {
		return "it was written by another version", false
	}
	cr.cached = make([][]byte, len(entries))
	cur := beads.Cursor()
	k, v := cur.First()
	// The walk reads every page of the entries: they are let go as it goes (release), and only
	// those of the entries read later come back.
	walked := 0
	next := func() ([]byte, []byte) {
		if walked++; walked%releaseEvery == 0 {
			cr.release()
		}
		return cur.Next()
	}
	// Equality is tried first: it is the usual case, and a test of equal bytes, where an
	// ordering compares them (a million keys of a common prefix: 2% of the scan's CPU).
	for i, e := range entries {
		for k != nil {
			if string(k) == e.name {
				cr.cached[i] = v
				k, v = next()
				break
			}
			if string(k) > e.name {
				break
			}
			cr.stale = append(cr.stale, bytes.Clone(k))
			k, v = next()
		}
	}
	for ; k != nil; k, _ = next() {
		cr.stale = append(cr.stale, bytes.Clone(k))
	}
	cr.chunkVals = make([][]byte, len(cr.starts))
	cur = chunks.Cursor()
	k, v = cur.First()
	for c, start := range cr.starts {
		name := entries[start].name
		for k != nil {
			if string(k) == name {
				cr.chunkVals[c] = v
				k, v = cur.Next()
				break
			}
			if string(k) > name {
				break
			}
			cr.staleChunks = append(cr.staleChunks, bytes.Clone(k))
			k, v = cur.Next()
		}
	}
	for ; k != nil; k, _ = cur.Next() {
		cr.staleChunks = append(cr.staleChunks, bytes.Clone(k))
	}
	cr.release()
	return "", false
}

// releaseEvery is how many entries load walks, or the scan emits, between two releases of the
// cache's memory map (cacheRun.release): a few MB of its pages.
const releaseEvery = 16384

// release lets the pages of the cache's memory map go from this process (madvise
// MADV_DONTNEED), so that they stop counting in its RSS: the map is shared and read-only, so a
// page read again is mapped in again from the page cache, as it was. The walk of load reads
// every page of the entries, the scan those of the chunks that changed; with the map kept whole
// (MAP_POPULATE, or every page read), a cached million pairs peaked at 450-520 MB, of which
// 205 MB were the map (issue 22). The map cannot move meanwhile: bbolt maps the file anew only
// in a write transaction, which waits for the read transaction cr.tx to end; without it there is
// nothing to release.
func (cr *cacheRun) release() {
	if cr.tx == nil {
		return
	}
	unix.Syscall(unix.SYS_MADVISE, cr.db.Info().Data, uintptr(cr.tx.Size()), unix.MADV_DONTNEED)
}

// close lets go of the cache as it was.
func (cr *cacheRun) close() {
	if cr.tx != nil {
		cr.tx.Rollback()
		cr.tx = nil
	}
	if cr.db != nil {
		cr.db.Close()
		cr.db = nil
	}
	cr.cached, cr.chunkVals = nil, nil
}

// read is Source.read through the cache: entry i's bead from its cached entry when its files
// are as they were, else read from them, with what the cache is to keep.
//
// A bead decoded from the cache goes in slab's next place when slab is not nil.
func (cr *cacheRun) read(s Source, fds dirs, e entry, i int, res *reservation, scratch *[]byte, pre *statted, slab *beadSlab) batch {
	var cached []byte
	if cr.cached != nil {
		cached = cr.cached[i]
	}
	// A bead with earlier attempts is read whole when they count: its entry holds only the
	// current attempt, cached by a run without --attempts.
	if cached != nil && cr.reuse && !(s.Attempts && e.hasAttempts) {
		var ids fileIDs
		if b, ok := cr.fromCache(fds, e, cached, scratch, pre, &ids, slab.next()); ok {
			return batch{beads: slab.one(b), cache: cacheOp{kind: opKeep}, ids: ids}
		}
	}
	var ids fileIDs
	out := s.read(fds, e, res, &ids)
	out.ids = ids
	if cached != nil && s.Attempts && e.hasAttempts {
		out.cache = cacheOp{kind: opLeave}
		return out
	}
	if cr.cacheable(s, e, out, &ids) {
		out.cache = cacheOp{kind: opPut, value: entryValue(e, &ids, out.beads[0])}
	}
	if cached != nil && cr.c.Verify && out.cache.kind == opPut {
		out.cache.differs = cr.differs(e.name, cached, out.cache.value)
	}
	return out
}

// fromCache decodes entry e's cached value when the identities of its files are the ones it
// holds, which it puts in ids: those of pre when its files were statted already, else one
// fstatat each (the names are built in scratch, the job's, not allocated).
func (cr *cacheRun) fromCache(fds dirs, e entry, v []byte, scratch *[]byte, pre *statted, ids *fileIDs, into *Bead) (b *Bead, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			cr.faulted.Store(true)
			b, ok = nil, false
		}
	}()
	body, ok := unseal(e.name, v)
	if !ok {
		return nil, false
	}
	d := decoder{b: body}
	if d.byte() != entryFlags(e) {
		return nil, false
	}
	if pre != nil && pre.done {
		if !pre.ok {
			return nil, false
		}
		ids.run = d.fileID()
		if e.result {
			ids.result = d.fileID()
		}
		if e.verify {
			ids.verify = d.fileID()
		}
		if !d.ok || *ids != pre.ids {
			return nil, false
		}
	} else {
		if ids.run = d.fileID(); !d.ok || !same(fds.runs, e.name, recordFileSuffix, ids.run, scratch) {
			return nil, false
		}
		if e.result {
			if ids.result = d.fileID(); !d.ok || !same(fds.results, e.name, recordFileSuffix, ids.result, scratch) {
				return nil, false
			}
		}
		if e.verify {
			if ids.verify = d.fileID(); !d.ok || !same(fds.results, e.name, verifyFileSuffix, ids.verify, scratch) {
				return nil, false
			}
		}
	}
	b = d.bead(into)
	if !d.end() {
		return nil, false
	}
	return b, true
}

// beadSlab is where a job decodes the beads it takes from the cache: one allocation for its
// beads and one for the slices that hold them, rather than two for each (the beads of a chunk
// that changed are decoded one by one: 1% new names scattered among a million decode half of
// them). A bead is not kept past its emission, so the slab goes with the job.
type beadSlab struct {
	beads []Bead
	ptrs  []*Bead
	n     int
}

// newBeadSlab makes a slab of n beads.
func newBeadSlab(n int) *beadSlab {
	return &beadSlab{beads: make([]Bead, n), ptrs: make([]*Bead, n)}
}

// next is the slab's next place, nil when it is full (or there is no slab): decoding then
// allocates the bead.
func (sl *beadSlab) next() *Bead {
	if sl == nil || sl.n == len(sl.beads) {
		return nil
	}
	sl.n++
	return &sl.beads[sl.n-1]
}

// one is a slice of b alone, from the slab's when it has room.
func (sl *beadSlab) one(b *Bead) []*Bead {
	if sl == nil || sl.n == 0 || sl.ptrs[sl.n-1] != nil {
		return []*Bead{b}
	}
	sl.ptrs[sl.n-1] = b
	return sl.ptrs[sl.n-1 : sl.n : sl.n]
}

// The names of a bead's files in runs/ and results/ (statedir.RecordFile, statedir.Dir.Verify),
// as suffixes of the bead: fromCache builds them in a scratch buffer (TestCacheFileSuffixes).
const (
	recordFileSuffix = ".json"
	verifyFileSuffix = "-verify.json"
)

func same(dirfd int, name, suffix string, id record.FileID, scratch *[]byte) bool {
	got, ok := record.StatNameAt(dirfd, name, suffix, scratch)
	return ok && got == id
}

// cacheable says whether the bead read for e is cached: one bead read whole from files under
// its own name that did not change within Fresh of the scan.
func (cr *cacheRun) cacheable(s Source, e entry, out batch, ids *fileIDs) bool {
	if !e.run || (s.Attempts && e.hasAttempts) || len(out.skipped) > 0 || len(out.beads) != 1 || ids.other {
		return false
	}
	fresh := ids.run.Ctime >= cr.before
	if e.result {
		fresh = fresh || ids.result.Ctime >= cr.before
	}
	if e.verify {
		fresh = fresh || ids.verify.Ctime >= cr.before
	}
	return !fresh
}

// differs, with Verify, says whether a cached entry holds the identities of the files just read
// but not the bead they give: the files were edited in place, their times kept.
func (cr *cacheRun) differs(key string, cached, value []byte) (differs bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			cr.faulted.Store(true)
		}
	}()
	if _, ok := unseal(key, cached); !ok {
		return false // damaged, not different: it is written anew all the same
	}
	n := identityLen(value)
	return n > 0 && len(cached) >= n && bytes.Equal(cached[:n], value[:n]) && !bytes.Equal(cached, value)
}

// note takes emitted batch i's cache op: into the pending changes while updating in place (or
// into the rebuild once they are too many), into the new file while rebuilding.
func (cr *cacheRun) note(i int, e entry, b batch) {
	op := b.cache
	if op.differs {
		cr.c.Stats.Differ++
		if len(cr.c.Stats.Differences) < maxDifferences {
			cr.c.Stats.Differences = append(cr.c.Stats.Differences, cr.src.paths().Run(e.name))
		}
	}
	switch op.kind {
	case opKeep:
		cr.c.Stats.Reused++
	default:
		if e.run {
			cr.c.Stats.Read++
		}
	}
	if cr.failed {
		return
	}
	cr.noted = i + 1
	if cr.w != nil {
		switch op.kind {
		case opKeep, opLeave:
			cr.w.put(e.name, cr.cached[i])
		case opPut:
			cr.w.put(e.name, op.value)
		}
		return
	}
	cr.kinds[i] = op.kind
	switch op.kind {
	case opPut:
		cr.pending = append(cr.pending, pendingPut{i, op.value})
		cr.pendingBytes += len(op.value)
	case opDrop:
		if cr.cached != nil && cr.cached[i] != nil {
			cr.deletes = append(cr.deletes, []byte(e.name))
		}
	}
	if cr.pendingBytes > maxPending {
		cr.switchToRebuild()
	}
}

// noteChunk takes emitted chunk c's cache op, as note an entry's.
func (cr *cacheRun) noteChunk(c int, op cacheOp) {
	if cr.failed {
		return
	}
	cr.chunksNoted = c + 1
	key := cr.entries[cr.starts[c]].name
	if cr.w != nil {
		switch op.kind {
		case opKeep:
			cr.w.putChunk(key, cr.chunkVals[c])
		case opPut:
			cr.w.putChunk(key, op.value)
		}
		return
	}
	cr.chunkKinds[c] = op.kind
	switch op.kind {
	case opPut:
		cr.chunkPending = append(cr.chunkPending, pendingPut{c, op.value})
		cr.pendingBytes += len(op.value)
	case opDrop:
		if cr.chunkVals != nil && cr.chunkVals[c] != nil {
			cr.chunkDeletes = append(cr.chunkDeletes, []byte(key))
		}
	}
	if cr.pendingBytes > maxPending {
		cr.switchToRebuild()
	}
}

// switchToRebuild turns an update in place with too many changes into a rebuild: the entries
// and chunks emitted so far go into the new file, the cached ones from the cache as it is.
func (cr *cacheRun) switchToRebuild() {
	if err := cr.startRebuild(); err != nil {
		cr.c.Stats.Off, cr.c.Stats.Warn = "cannot write it: "+err.Error(), true
		cr.abandon()
		return
	}
	cr.c.Stats.Rebuilt = "most entries changed"
	p := 0
	for j := 0; j < cr.noted; j++ {
		switch {
		case cr.kinds[j] == opKeep || cr.kinds[j] == opLeave:
			cr.w.put(cr.keyOf(j), cr.cached[j])
		case p < len(cr.pending) && cr.pending[p].i == j:
			cr.w.put(cr.keyOf(j), cr.pending[p].value)
			p++
		}
	}
	p = 0
	for c := 0; c < cr.chunksNoted; c++ {
		key := cr.entries[cr.starts[c]].name
		switch {
		case cr.chunkKinds[c] == opKeep:
			cr.w.putChunk(key, cr.chunkVals[c])
		case p < len(cr.chunkPending) && cr.chunkPending[p].i == c:
			cr.w.putChunk(key, cr.chunkPending[p].value)
			p++
		}
	}
	cr.pending, cr.deletes, cr.kinds = nil, nil, nil
	cr.chunkPending, cr.chunkDeletes, cr.chunkKinds = nil, nil, nil
}

// keyOf is entry j's name, which the rebuild writer keeps as its key.
func (cr *cacheRun) keyOf(j int) string { return cr.entries[j].name }

// abandon gives up on writing the cache this run: it is left as it was.
func (cr *cacheRun) abandon() {
	if cr.w != nil {
		cr.w.abort()
		cr.w = nil
	}
	cr.pending, cr.deletes, cr.kinds = nil, nil, nil
	cr.chunkPending, cr.chunkDeletes, cr.chunkKinds = nil, nil, nil
	cr.failed = true
}

// finish brings the cache up to date: the changes in one transaction, or the rebuilt file
// renamed into place. Nothing is written when a fault was met reading it (the cache file is then
// removed, to be rebuilt) or a write failed.
func (cr *cacheRun) finish() {
	defer cr.close()
	if cr.reused != nil {
		defer cr.reused()
	}
	if cr.faulted.Load() {
		cr.abandon()
		cr.removeFaulted()
		return
	}
	if cr.failed {
		return
	}
	if cr.w != nil {
		err := cr.w.commit(cr.c.Path)
		cr.w = nil
		switch {
		case errors.Is(err, errFaulted):
			cr.removeFaulted()
		case err != nil:
			cr.c.Stats.Off, cr.c.Stats.Warn = "cannot write it: "+err.Error(), true
		}
		return
	}
	if len(cr.pending) == 0 && len(cr.deletes) == 0 && len(cr.stale) == 0 &&
		len(cr.chunkPending) == 0 && len(cr.chunkDeletes) == 0 && len(cr.staleChunks) == 0 {
		return
	}
	// The read transaction ends first: bbolt's writer may need to map the file anew, which
	// waits for every reader. The pending values are the scan's own, not the map's.
	cr.tx.Rollback()
	cr.tx, cr.cached, cr.chunkVals = nil, nil, nil
	err := func() (err error) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("it is damaged (%v)", r)
			}
		}()
		return cr.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketBeads)
			for _, k := range cr.stale {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			for _, k := range cr.deletes {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			for _, p := range cr.pending {
				if err := b.Put([]byte(cr.entries[p.i].name), p.value); err != nil {
					return err
				}
			}
			cb := tx.Bucket(bucketChunks)
			for _, ks := range [][][]byte{cr.staleChunks, cr.chunkDeletes} {
				for _, k := range ks {
					if err := cb.Delete(k); err != nil {
						return err
					}
				}
			}
			for _, p := range cr.chunkPending {
				if err := cb.Put([]byte(cr.entries[cr.starts[p.i]].name), p.value); err != nil {
					return err
				}
			}
			return nil
		})
	}()
	if err != nil {
		cr.c.Stats.Off, cr.c.Stats.Warn = "cannot write it: "+err.Error(), true
	}
}

// removeFaulted removes the cache, a page of which faulted or did not decode as it was read:
// what the scan took from it was read again from the files, but it cannot be written anew from
// it, so it is rebuilt next run.
func (cr *cacheRun) removeFaulted() {
	cr.close()
	os.Remove(cr.c.Path)
	cr.c.Stats.Unreadable = "a page of it faulted or did not decode as the scan read it"
	cr.c.Stats.Off, cr.c.Stats.Warn = "it is removed, to be rebuilt next run", true
}

// startRebuild begins writing the cache anew, beside it.
func (cr *cacheRun) startRebuild() error {
	w, err := newCacheWriter(filepath.Dir(cr.c.Path), cr.c.stamp())
	if err != nil {
		return err
	}
	cr.w = w
	return nil
}

// cacheWriter writes a new cache to a temporary file, from its own goroutine so that the scan
// does not wait on bbolt, in transactions of rebuildBatch entries (keys in order, so each is an
// append); commit renames it into place once it is whole and on disk.
type cacheWriter struct {
	db      *bolt.DB
	tmp     string
	ch      chan kv
	done    chan error
	aborted atomic.Bool // write rolls back rather than commits what it was given
}

type kv struct {
	k     string
	v     []byte // not changed until the writer is done: bbolt keeps it until its commit
	chunk bool   // a chunk's, not an entry's
}

func newCacheWriter(dir, stamp string) (*cacheWriter, error) {
	tmp := filepath.Join(dir, fmt.Sprintf("%s%d-%d", tempPrefix, os.Getpid(), time.Now().UnixNano()))
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{
		Timeout: cacheLockWait, FreelistType: bolt.FreelistMapType, NoSync: true, NoGrowSync: true,
		OpenFile: func(p string, flag int, _ os.FileMode) (*os.File, error) {
			return os.OpenFile(p, flag|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		},
	})
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	w := &cacheWriter{db: db, tmp: tmp, ch: make(chan kv, 4096), done: make(chan error, 1)}
	go func() { w.done <- w.write(stamp) }()
	return w, nil
}

func (w *cacheWriter) put(k string, v []byte) { w.ch <- kv{k, v, false} }

func (w *cacheWriter) putChunk(k string, v []byte) { w.ch <- kv{k, v, true} }

// errAborted is what a writer aborted returns; errFaulted, one that failed on a value it was
// given from the cache as it was.
var (
	errAborted = errors.New("aborted")
	errFaulted = errors.New("the cache as it was is damaged")
)

// write puts what comes on ch, then the stamp. After a failure it only drains ch.
//
// What it is given may be the old cache's bytes, in its map (an entry kept as it was), which
// bbolt reads when it copies them into the new file's pages: on a file cut short under the map
// that read faults, on this goroutine. SetPanicOnFault makes the fault a panic, recovered here
// as a failed write (the new file is dropped), rather than the end of the process.
func (w *cacheWriter) write(stamp string) (err error) {
	defer func() {
		for range w.ch {
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w (%v)", errFaulted, r)
		}
	}()
	var tx *bolt.Tx
	defer func() {
		if tx != nil {
			tx.Rollback()
		}
	}()
	begin := func() (b, cb *bolt.Bucket, err error) {
		if tx, err = w.db.Begin(true); err != nil {
			return nil, nil, err
		}
		if b, err = tx.CreateBucketIfNotExists(bucketBeads); err != nil {
			return nil, nil, err
		}
		if cb, err = tx.CreateBucketIfNotExists(bucketChunks); err != nil {
			return nil, nil, err
		}
		b.FillPercent, cb.FillPercent = 1, 1
		return b, cb, nil
	}
	b, cb, err := begin()
	if err != nil {
		return err
	}
	n := 0
	for e := range w.ch {
		to := b
		if e.chunk {
			to = cb
		}
		if err := to.Put([]byte(e.k), e.v); err != nil {
			return err
		}
		if n++; n%rebuildBatch == 0 {
			err := tx.Commit()
			tx = nil
			if err != nil {
				return err
			}
			if b, cb, err = begin(); err != nil {
				return err
			}
		}
	}
	if w.aborted.Load() {
		// Nothing of it is kept: committing would only read (and on a damaged old cache,
		// fault on) the values given.
		return errAborted
	}
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	if err := meta.Put(keyStamp, []byte(stamp)); err != nil {
		return err
	}
	err = tx.Commit()
	tx = nil
	return err
}

// commit waits for the writer, then puts the new cache in place of the old: synced first, so
// that what the rename makes the cache is whole.
func (w *cacheWriter) commit(path string) error {
	close(w.ch)
	err := <-w.done
	if err == nil {
		err = w.db.Sync()
	}
	if cerr := w.db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.tmp, path)
	}
	if err != nil {
		os.Remove(w.tmp)
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// abort drops the new cache.
func (w *cacheWriter) abort() {
	w.aborted.Store(true)
	close(w.ch)
	<-w.done
	w.db.Close()
	os.Remove(w.tmp)
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
