package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"runtime/debug"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// Chunks: a scan reads its entries in chunks of consecutive names, and the cache keeps, per
// chunk, the aggregator's totals over its beads (an Aggregator by day, encoded by
// encodeTotals) with a digest of what they were counted from: each entry's name, which files
// it has and their identities. A report that counts every bead (no filter, no CSV rows: see
// Source.Merge) adds a chunk whose files all have the identities of its digest as one set of
// totals, without decoding its entries (issue 22).
//
// The chunks' bounds depend on the names, not on their positions, so that a record added or
// removed changes only its own chunk: an entry begins a chunk when the hash of its name has its
// low chunkBits bits zero (a chunk is 2^chunkBits entries on average). A chunk is also cut at
// 4<<chunkBits entries, so that no names make one huge; such cuts can move with a record added
// before them, up to the next bound of the first kind.

// defaultChunkBits makes chunks of 64 entries on average: a million pairs are 16,000 chunks,
// and the scan's jobs are these chunks.
const defaultChunkBits = 6

// chunkStarts returns the index of the first entry of each chunk of entries.
func chunkStarts(entries []entry, bits uint) []int {
	if len(entries) == 0 {
		return nil
	}
	mask := uint32(1)<<bits - 1
	most := 4 << bits
	starts := make([]int, 0, len(entries)>>bits+1)
	starts = append(starts, 0)
	for i := 1; i < len(entries); i++ {
		if fnv32(entries[i].name)&mask == 0 || i-starts[len(starts)-1] >= most {
			starts = append(starts, i)
		}
	}
	return starts
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// digestLen is the length of a chunk's digest (SHA-256).
//
// The digest is what makes a chunk's totals taken without reading its pairs, so a changed chunk
// must never have the digest of the unchanged one: a 64-bit or keyed non-cryptographic hash
// would make that unlikely, not infeasible, and the file identities hashed are in part chosen
// by whoever writes the records (sizes, times set by touch). SHA-256 is kept: with the SHA
// extensions it was 1% of a cached million pairs' CPU (0.07 s of 6.8 s, pprof), the encoding of
// the identities hashed 1.6%, against 64% for the fstatat calls (issue 22).
const digestLen = sha256.Size

// chunkDigest is the digest of a chunk's entries with the identities of their files (ids(k),
// the k-th entry's).
func chunkDigest(entries []entry, ids func(k int) *fileIDs) [digestLen]byte {
	h := sha256.New()
	buf := make([]byte, 0, 256)
	for k, e := range entries {
		buf = binary.AppendUvarint(buf[:0], uint64(len(e.name)))
		buf = append(buf, e.name...)
		buf = append(buf, entryFlags(e))
		if e.run {
			id := ids(k)
			buf = appendID(buf, id.run)
			if e.result {
				buf = appendID(buf, id.result)
			}
			if e.verify {
				buf = appendID(buf, id.verify)
			}
		}
		h.Write(buf)
	}
	var d [digestLen]byte
	h.Sum(d[:0])
	return d
}

// maxSummed bounds a duration, a run's own duration and an attempt number in a chunk's totals:
// the aggregator sums them as float64, and sums of whole numbers are exact, in any order, as
// long as they stay under 2^53; with every value under 2^24, that holds for 2^29 beads. A chunk
// with a bead past it is not summed in the cache (its beads are decoded one by one, in order).
const maxSummed = 1 << 24

// summable says whether b can be counted in a chunk's totals.
func summable(b *Bead) bool {
	ok := func(v int64) bool { return v > -maxSummed && v < maxSummed }
	return ok(b.Seconds) && (b.RunSeconds == nil || ok(*b.RunSeconds)) && ok(int64(b.Attempt))
}

// Merge adds the totals of p, an Aggregator by day (or of no period when a has none), to a:
// what a would hold had it counted p's beads itself.
func (a *Aggregator) Merge(p *Aggregator) {
	a.total += p.total
	a.success += p.success
	a.failed += p.failed
	a.timeout += p.timeout
	a.running += p.running
	a.retries += p.retries
	a.skipped += p.skipped
	a.durationSum += p.durationSum
	a.durations = append(a.durations, p.durations...)
	for _, m := range []struct{ to, from map[string]*group }{{a.agents, p.agents}, {a.models, p.models}, {a.templates, p.templates}} {
		for k, g := range m.from {
			to := groupOf(m.to, k)
			to.count += g.count
			to.success += g.success
			to.failed += g.failed
			to.durations += g.durations
			to.durationSum += g.durationSum
		}
	}
	for _, m := range []struct{ to, from map[string]int }{{a.reasons, p.reasons}, {a.tasks, p.tasks}, {a.verified, p.verified}} {
		for k, n := range m.from {
			m.to[k] += n
		}
	}
	if a.period != "" {
		for day, pp := range p.periods {
			key := day
			if a.period == PeriodWeek {
				t, err := time.Parse(time.DateOnly, day)
				if err != nil {
					continue // not written by periodKey
				}
				y, w := t.ISOWeek()
				key = weekKey(y, w)
			}
			to := a.periods[key]
			if to == nil {
				to = &periodAcc{}
				a.periods[key] = to
			}
			to.runs += pp.runs
			to.success += pp.success
			to.durations = append(to.durations, pp.durations...)
		}
	}
	for k, s := range p.scores {
		to := a.scores[k]
		if to == nil {
			to = &scoreAcc{}
			a.scores[k] = to
		}
		to.uses += s.uses
		to.success += s.success
		to.durations += s.durations
		to.durationSum += s.durationSum
		to.retriesSum += s.retriesSum
	}
}

// encodeTotals appends the totals of a, an Aggregator by day over one chunk, to buf. Its float
// sums are whole numbers under 2^53 (maxSummed), written as varints.
func encodeTotals(buf []byte, a *Aggregator) []byte {
	for _, v := range []int{a.total, a.success, a.failed, a.timeout, a.running, a.retries, a.skipped} {
		buf = binary.AppendVarint(buf, int64(v))
	}
	buf = binary.AppendVarint(buf, int64(a.durationSum))
	buf = appendDurations(buf, a.durations)
	for _, m := range []map[string]*group{a.agents, a.models, a.templates} {
		buf = binary.AppendUvarint(buf, uint64(len(m)))
		for _, k := range sortedKeys(m) {
			g := m[k]
			buf = appendText(buf, k)
			for _, v := range []int64{int64(g.count), int64(g.success), int64(g.failed), int64(g.durations), int64(g.durationSum)} {
				buf = binary.AppendVarint(buf, v)
			}
		}
	}
	for _, m := range []map[string]int{a.reasons, a.tasks, a.verified} {
		buf = binary.AppendUvarint(buf, uint64(len(m)))
		for _, k := range sortedKeys(m) {
			buf = appendText(buf, k)
			buf = binary.AppendVarint(buf, int64(m[k]))
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(a.periods)))
	for _, k := range sortedKeys(a.periods) {
		p := a.periods[k]
		buf = appendText(buf, k)
		buf = binary.AppendVarint(buf, int64(p.runs))
		buf = binary.AppendVarint(buf, int64(p.success))
		buf = appendDurations(buf, p.durations)
	}
	buf = binary.AppendUvarint(buf, uint64(len(a.scores)))
	for _, k := range sortedKeys(a.scores) {
		s := a.scores[k]
		buf = appendText(buf, k)
		for _, v := range []int64{int64(s.uses), int64(s.success), int64(s.durations), int64(s.durationSum), int64(s.retriesSum)} {
			buf = binary.AppendVarint(buf, v)
		}
	}
	return buf
}

func appendText(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func appendDurations(buf []byte, ds []int32) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(ds)))
	for _, d := range ds {
		buf = binary.AppendVarint(buf, int64(d))
	}
	return buf
}

// decodeTotals reads the totals encodeTotals wrote for a chunk of n entries into a new
// Aggregator by day; ok false when they cannot be read whole, or count more than n beads.
func decodeTotals(body []byte, n int) (a *Aggregator, ok bool) {
	d := decoder{b: body}
	a = NewAggregator(PeriodDay)
	count := func() int {
		v := d.varint()
		if v < 0 || v > int64(n) {
			d.ok = false
			return 0
		}
		return int(v)
	}
	sum := func() float64 {
		v := d.varint()
		if v <= -maxSummed*int64(n) || v >= maxSummed*int64(n) {
			d.ok = false
			return 0
		}
		return float64(v)
	}
	size := func() int {
		v := d.uvarint()
		if v > uint64(n) {
			d.ok = false
			return 0
		}
		return int(v)
	}
	durations := func() []int32 {
		k := size()
		if k == 0 {
			return nil
		}
		ds := make([]int32, 0, k)
		for range k {
			v := d.varint()
			if v < math.MinInt32 || v > math.MaxInt32 {
				d.ok = false
			}
			ds = append(ds, int32(v))
		}
		return ds
	}
	in := interned.Get().(map[string]string)
	defer interned.Put(in)
	a.total, a.success, a.failed, a.timeout, a.running, a.retries, a.skipped = count(), count(), count(), count(), count(), count(), count()
	a.durationSum = sum()
	a.durations = durations()
	for _, m := range []map[string]*group{a.agents, a.models, a.templates} {
		for range size() {
			k := d.text(in)
			m[k] = &group{count: count(), success: count(), failed: count(), durations: count(), durationSum: sum()}
		}
	}
	for _, m := range []map[string]int{a.reasons, a.tasks, a.verified} {
		for range size() {
			k := d.text(in)
			m[k] = count()
		}
	}
	for range size() {
		k := d.text(in)
		a.periods[k] = &periodAcc{runs: count(), success: count(), durations: durations()}
	}
	for range size() {
		k := d.text(in)
		a.scores[k] = &scoreAcc{uses: count(), success: count(), durations: count(), durationSum: sum(), retriesSum: sum()}
	}
	if !d.end() || a.total > n {
		return nil, false
	}
	return a, true
}

// statted is what sum found of an entry's files: their identities, ok when each was there (a
// regular file); done when it looked.
type statted struct {
	ids      fileIDs
	done, ok bool
}

// sum returns chunk c's totals (entries lo to hi) from the cache when its files have the
// identities of its digest, else nil, with the identities it found in pre for the entries'
// own check.
func (cr *cacheRun) sum(fds dirs, c, lo, hi int, pre []statted, scratch *[]byte) (totals *Aggregator) {
	v := cr.chunkVals[c]
	if v == nil {
		return nil
	}
	for i := lo; i < hi; i++ {
		e := cr.entries[i]
		if !e.run {
			continue
		}
		if cr.cached[i] == nil || (cr.src.Attempts && e.hasAttempts) {
			return nil
		}
		p := &pre[i-lo]
		p.done = true
		var ok bool
		if p.ids.run, ok = record.StatNameAt(fds.runs, e.name, recordFileSuffix, scratch); !ok {
			return nil
		}
		if e.result {
			if p.ids.result, ok = record.StatNameAt(fds.results, e.name, recordFileSuffix, scratch); !ok {
				return nil
			}
		}
		if e.verify {
			if p.ids.verify, ok = record.StatNameAt(fds.results, e.name, verifyFileSuffix, scratch); !ok {
				return nil
			}
		}
		p.ok = true
	}
	d := chunkDigest(cr.entries[lo:hi], func(k int) *fileIDs { return &pre[k].ids })
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			cr.faulted.Store(true)
			totals = nil
		}
	}()
	body, ok := unseal(cr.entries[lo].name, v)
	if !ok || len(body) < digestLen || !bytes.Equal(body[:digestLen], d[:]) {
		return nil
	}
	if totals, ok = decodeTotals(body[digestLen:], hi-lo); !ok {
		return nil
	}
	return totals
}

// chunkOp is what the cache is to keep of chunk c (entries lo to hi), read as batches: its
// totals when every entry's bead is cached (or has no run), the value it has when its digest is
// the same and the cache is reused, nothing when some entry is not cached. With an opPut, it
// returns the totals it encoded too: an Aggregator by day of the batches' beads.
func (cr *cacheRun) chunkOp(c, lo, hi int, batches []batch) (cacheOp, *Aggregator) {
	for k, b := range batches {
		e := cr.entries[lo+k]
		if (cr.src.Attempts && e.hasAttempts) || len(b.skipped) > 0 {
			return cacheOp{kind: opDrop}, nil
		}
		if !e.run {
			if len(b.beads) > 0 {
				return cacheOp{kind: opDrop}, nil
			}
			continue
		}
		if (b.cache.kind != opKeep && b.cache.kind != opPut) || len(b.beads) != 1 || !summable(b.beads[0]) {
			return cacheOp{kind: opDrop}, nil
		}
	}
	d := chunkDigest(cr.entries[lo:hi], func(k int) *fileIDs { return &batches[k].ids })
	key := cr.entries[lo].name
	if cr.reuse && cr.chunkVals != nil && cr.chunkVals[c] != nil && cr.sameDigest(key, cr.chunkVals[c], d[:]) {
		return cacheOp{kind: opKeep}, nil
	}
	a := NewAggregator(PeriodDay)
	for _, b := range batches {
		for _, bd := range b.beads {
			a.Add(bd)
		}
	}
	return cacheOp{kind: opPut, value: seal(key, encodeTotals(append([]byte(nil), d[:]...), a))}, a
}

// sameDigest says whether a chunk's cached value is whole and has digest d.
func (cr *cacheRun) sameDigest(key string, v, d []byte) (same bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			cr.faulted.Store(true)
			same = false
		}
	}()
	body, ok := unseal(key, v)
	return ok && len(body) >= digestLen && bytes.Equal(body[:digestLen], d)
}
