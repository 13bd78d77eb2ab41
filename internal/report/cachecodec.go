package report

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/agentfleet/fleet/internal/record"
)

// A cache entry (cacheFormat 1) is, in this order:
//
//	flags          1 byte: 1 the listing had the result, 2 it had the verification
//	identities     record.FileID of the run, then of the result and the verification when
//	               flagged, each as four zigzag varints (inode, size, mtime, ctime)
//	the bead       its eleven texts (length, bytes): ID, Agent, Model, Template, Task,
//	               StartedAt, RunStatus, Status, FinishedAt, Reason, Verified; Attempt (varint);
//	               1 byte of flags (1 HasResult, 2 HasSeconds, 4 HasStart, 8 HasEnd,
//	               16 RunSeconds set); then RunSeconds, Seconds (varints) and Start, Finish
//	               (varint seconds, uvarint nanoseconds since the Unix epoch, UTC) when flagged.
//	checksum       CRC-32C (Castagnoli) of the key and all of the above, 4 bytes little-endian
//
// bbolt checks its meta pages but not the data: the checksum makes a damaged entry (a flipped
// bit in a text, a key written over) one to read again rather than a wrong bead.
//
// Raw is never cached. Everything is read back with bounds (decoder): a damaged entry is one to
// read again, never a panic or a huge allocation.

const (
	flagResult = 1 << iota
	flagVerify
)

const (
	beadHasResult = 1 << iota
	beadHasSeconds
	beadHasStart
	beadHasEnd
	beadRunSeconds
)

// maxCachedText bounds a text read back from the cache: every text of a Bead is clipped to
// maxText bytes and "…", or is a file name (255 bytes at most on Linux's file systems).
const maxCachedText = 1024

// entryFlags are e's flags byte.
func entryFlags(e entry) byte {
	var f byte
	if e.result {
		f |= flagResult
	}
	if e.verify {
		f |= flagVerify
	}
	return f
}

// entrySize bounds the length of b's sealed entry: its texts, and at most 10 bytes a varint
// (12 of the identities, 11 lengths, 7 of numbers and times), 2 of flags and 4 of checksum. An entry built
// in a buffer of that capacity is one allocation (it grew from nil four or five times: 1% of a
// first run's CPU, issue 22).
func entrySize(b *Bead) int {
	n := 2 + 4 + 10*(12+11+7)
	for _, s := range []string{b.ID, b.Agent, b.Model, b.Template, b.Task, b.StartedAt, b.RunStatus, b.Status, b.FinishedAt, b.Reason, b.Verified} {
		n += len(s)
	}
	return n
}

// entryValue is e's entry, sealed: what the cache keeps of it.
func entryValue(e entry, ids *fileIDs, b *Bead) []byte {
	return seal(e.name, encodeEntry(make([]byte, 0, entrySize(b)), e, ids, b))
}

// encodeEntry appends e's entry to buf.
func encodeEntry(buf []byte, e entry, ids *fileIDs, b *Bead) []byte {
	buf = append(buf, entryFlags(e))
	buf = appendID(buf, ids.run)
	if e.result {
		buf = appendID(buf, ids.result)
	}
	if e.verify {
		buf = appendID(buf, ids.verify)
	}
	for _, s := range []string{b.ID, b.Agent, b.Model, b.Template, b.Task, b.StartedAt, b.RunStatus, b.Status, b.FinishedAt, b.Reason, b.Verified} {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	buf = binary.AppendVarint(buf, int64(b.Attempt))
	var f byte
	for _, x := range []struct {
		set  bool
		flag byte
	}{{b.HasResult, beadHasResult}, {b.HasSeconds, beadHasSeconds}, {b.HasStart, beadHasStart}, {b.HasEnd, beadHasEnd}, {b.RunSeconds != nil, beadRunSeconds}} {
		if x.set {
			f |= x.flag
		}
	}
	buf = append(buf, f)
	if b.RunSeconds != nil {
		buf = binary.AppendVarint(buf, *b.RunSeconds)
	}
	if b.HasSeconds {
		buf = binary.AppendVarint(buf, b.Seconds)
	}
	if b.HasStart {
		buf = appendTime(buf, b.Start)
	}
	if b.HasEnd {
		buf = appendTime(buf, b.Finish)
	}
	return buf
}

func appendID(buf []byte, id record.FileID) []byte {
	for _, v := range []int64{id.Ino, id.Size, id.Mtime, id.Ctime} {
		buf = binary.AppendVarint(buf, v)
	}
	return buf
}

func appendTime(buf []byte, t time.Time) []byte {
	buf = binary.AppendVarint(buf, t.Unix())
	return binary.AppendUvarint(buf, uint64(t.Nanosecond()))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// keyBytes is key's bytes, not copied (crc32 takes a slice, and a copy of each key was an
// allocation per entry sealed or read): read, never written.
func keyBytes(key string) []byte { return unsafe.Slice(unsafe.StringData(key), len(key)) }

// seal appends the checksum of key and body to body.
func seal(key string, body []byte) []byte {
	sum := crc32.Update(crc32.Checksum(keyBytes(key), castagnoli), castagnoli, body)
	return binary.LittleEndian.AppendUint32(body, sum)
}

// unseal returns the body of a value sealed with key, ok false when its checksum is wrong.
func unseal(key string, v []byte) ([]byte, bool) {
	if len(v) < 4 {
		return nil, false
	}
	body := v[:len(v)-4]
	sum := crc32.Update(crc32.Checksum(keyBytes(key), castagnoli), castagnoli, body)
	return body, sum == binary.LittleEndian.Uint32(v[len(v)-4:])
}

// identityLen is how long the flags and identities at the start of an entry are, 0 when it
// cannot be read.
func identityLen(v []byte) int {
	d := decoder{b: v}
	f := d.byte()
	d.fileID()
	if f&flagResult != 0 {
		d.fileID()
	}
	if f&flagVerify != 0 {
		d.fileID()
	}
	if !d.ok {
		return 0
	}
	return d.off
}

// decoder reads an entry; ok turns false at the first thing that is not there or out of
// bounds, after which every read gives zero values.
type decoder struct {
	b   []byte
	off int
	ok  bool
	set bool
}

func (d *decoder) good() bool {
	if !d.set {
		d.ok, d.set = true, true
	}
	return d.ok
}

func (d *decoder) byte() byte {
	if !d.good() || d.off >= len(d.b) {
		d.ok = false
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *decoder) varint() int64 {
	if !d.good() {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.ok = false
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) uvarint() uint64 {
	if !d.good() {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.ok = false
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) fileID() record.FileID {
	return record.FileID{Ino: d.varint(), Size: d.varint(), Mtime: d.varint(), Ctime: d.varint()}
}

// text reads a text, interned in in when it is one of few values (agents, statuses).
func (d *decoder) text(in map[string]string) string {
	n := d.uvarint()
	if !d.ok || n > maxCachedText || n > uint64(len(d.b)-d.off) {
		d.ok = false
		return ""
	}
	raw := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	if in == nil {
		return string(raw)
	}
	if s, ok := in[string(raw)]; ok {
		return s
	}
	s := string(raw)
	if len(in) < maxInterned {
		in[s] = s
	}
	return s
}

func (d *decoder) time() time.Time {
	sec := d.varint()
	nsec := d.uvarint()
	if nsec >= 1e9 {
		d.ok = false
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// maxInterned bounds an intern table: a history of a million distinct reasons does not grow one.
const maxInterned = 4096

// interned are the tables of the texts that repeat from bead to bead, one per decoding
// goroutine at a time: a million beads name a few agents, and the aggregator's maps are keyed
// by them, so each is one string rather than a million copies.
var interned = sync.Pool{New: func() any { return map[string]string{} }}

// raw reads a text's bytes, in the entry (bounded as text).
func (d *decoder) raw() []byte {
	n := d.uvarint()
	if !d.ok || n > maxCachedText || n > uint64(len(d.b)-d.off) {
		d.ok = false
		return nil
	}
	d.off += int(n)
	return d.b[d.off-int(n) : d.off]
}

// bead reads the bead that follows the identities, into into when it is not nil (a new Bead
// when it is).
func (d *decoder) bead(into *Bead) *Bead {
	in := interned.Get().(map[string]string)
	defer interned.Put(in)
	b := into
	if b == nil {
		b = &Bead{}
	}
	// The three texts of a bead's own (its name and times) are one string, cut in three: one
	// allocation, not three.
	id := d.raw()
	b.Agent = d.text(in)
	b.Model = d.text(in)
	b.Template = d.text(in)
	b.Task = d.text(in)
	started := d.raw()
	b.RunStatus = d.text(in)
	b.Status = d.text(in)
	finished := d.raw()
	b.Reason = d.text(in)
	b.Verified = d.text(in)
	var own strings.Builder
	own.Grow(len(id) + len(started) + len(finished))
	own.Write(id)
	own.Write(started)
	own.Write(finished)
	all := own.String()
	b.ID, all = all[:len(id)], all[len(id):]
	b.StartedAt, b.FinishedAt = all[:len(started)], all[len(started):]
	b.Attempt = int(d.varint())
	f := d.byte()
	b.HasResult = f&beadHasResult != 0
	b.HasSeconds = f&beadHasSeconds != 0
	b.HasStart = f&beadHasStart != 0
	b.HasEnd = f&beadHasEnd != 0
	if f&beadRunSeconds != 0 {
		v := d.varint()
		b.RunSeconds = &v
	}
	if b.HasSeconds {
		b.Seconds = d.varint()
	}
	if b.HasStart {
		b.Start = d.time()
	}
	if b.HasEnd {
		b.Finish = d.time()
	}
	return b
}

// end says whether the entry was read whole and nothing follows.
func (d *decoder) end() bool { return d.good() && d.off == len(d.b) }
