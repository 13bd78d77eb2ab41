package report

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// The cache is a bbolt file, and bbolt maps it whole before it reads a page: a page past the
// end of a file cut short is then a fault (SIGBUS) in the middle of bbolt's open, which no
// recover catches (issue 27, bug 4: 6 of 15 random truncations crashed every run). So before
// bbolt is given the file, checkMetas reads its two meta pages itself, with pread and a bound,
// and refuses a file they do not describe whole.
//
// bbolt's format (version 2), as its documentation and internal/common/{page,meta}.go lay it
// out: the file is pages of one size; pages 0 and 1 are meta pages, written alternately (page
// txid%2), each a 16-byte page header (page id uint64, flags uint16 = 0x04 for a meta page,
// count uint16, overflow uint32) then the meta, in the machine's byte order:
//
//	0  magic     uint32 0xED0CDAED
//	4  version   uint32 2
//	8  page size uint32
//	12 flags     uint32
//	16 root      uint64 the root bucket's page, then its sequence uint64
//	32 freelist  uint64 its page, or all ones when it is not written
//	40 pgid      uint64 the high-water mark: pages 0 to pgid-1 are in use
//	48 txid      uint64
//	56 checksum  uint64 FNV-1a 64 of the 56 bytes before it
//
// bbolt reads the valid meta of the higher txid (else the other), and every page below its
// pgid may be read: the file must hold pgid × page size bytes.
const (
	boltPageHeader   = 16
	boltMetaPageFlag = 0x04
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltMetaLen      = 64
	boltChecksumAt   = 56
	boltNoFreelist   = ^uint64(0)
	// bbolt looks for the second meta page at 1 KiB << 0..14 when the first does not check
	// out: the page sizes it can open.
	boltMinPageSize = 1 << 10
	boltMaxPageSize = 1 << 24
)

// boltMeta is what checkMetas needs of a meta page.
type boltMeta struct {
	pageSize                 uint64
	root, freelist, pgid, tx uint64
}

// errCutShort says that a cache file is shorter than its meta pages say it is.
var errCutShort = errors.New("cut short")

// checkMetas says why the bbolt file f of size bytes cannot be opened safely, nil when it can:
// neither meta page checks out, or one that does (so one bbolt may read) describes pages past
// the file's end. It reads two meta pages' bytes, however large or damaged the file.
func checkMetas(f io.ReaderAt, size int64) error {
	meta0, err0 := readMeta(f, 0, 0)
	pageSize := meta0.pageSize
	if err0 != nil {
		pageSize = findPageSize(f, size)
		if pageSize == 0 {
			return fmt.Errorf("neither of its meta pages checks out (%v)", err0)
		}
	}
	meta1, err1 := readMeta(f, int64(pageSize), 1)
	if err1 == nil && meta1.pageSize != pageSize {
		return fmt.Errorf("its meta pages give two page sizes, %d and %d", pageSize, meta1.pageSize)
	}
	for _, m := range []struct {
		meta boltMeta
		err  error
	}{{meta0, err0}, {meta1, err1}} {
		if m.err != nil {
			continue
		}
		// pgid × page size, compared without the multiplication, which a damaged pgid overflows.
		if m.meta.pgid > uint64(size)/pageSize {
			return fmt.Errorf("%w: %d bytes, where its meta page gives %d pages of %d", errCutShort, size, m.meta.pgid, pageSize)
		}
	}
	return nil
}

// findPageSize is the page size of a bbolt file whose first meta page does not check out, from
// the second, looked for where bbolt looks for it; 0 when it is not found.
func findPageSize(f io.ReaderAt, size int64) uint64 {
	for ps := int64(boltMinPageSize); ps <= boltMaxPageSize && ps+boltPageHeader+boltMetaLen <= size; ps <<= 1 {
		if m, err := readMeta(f, ps, 1); err == nil && int64(m.pageSize) == ps {
			return m.pageSize
		}
	}
	return 0
}

// readMeta reads and checks the meta page at offset at, which should be page id.
func readMeta(f io.ReaderAt, at int64, id uint64) (boltMeta, error) {
	var buf [boltPageHeader + boltMetaLen]byte
	if _, err := f.ReadAt(buf[:], at); err != nil {
		if errors.Is(err, io.EOF) {
			return boltMeta{}, fmt.Errorf("meta page %d: %w", id, errCutShort)
		}
		return boltMeta{}, err
	}
	order := binary.NativeEndian
	head, meta := buf[:boltPageHeader], buf[boltPageHeader:]
	m := boltMeta{
		pageSize: uint64(order.Uint32(meta[8:])),
		root:     order.Uint64(meta[16:]),
		freelist: order.Uint64(meta[32:]),
		pgid:     order.Uint64(meta[40:]),
		tx:       order.Uint64(meta[48:]),
	}
	sum := fnv.New64a()
	sum.Write(meta[:boltChecksumAt])
	switch {
	case order.Uint32(meta[0:]) != boltMagic:
		return m, fmt.Errorf("meta page %d: not a bbolt file", id)
	case order.Uint32(meta[4:]) != boltVersion:
		return m, fmt.Errorf("meta page %d: bbolt format %d, not %d", id, order.Uint32(meta[4:]), boltVersion)
	case order.Uint64(meta[boltChecksumAt:]) != sum.Sum64():
		return m, fmt.Errorf("meta page %d: its checksum is wrong", id)
	// What the checksum cannot say: that the meta is where it was written, and consistent.
	case order.Uint64(head[0:]) != id || order.Uint16(head[8:]) != boltMetaPageFlag || m.tx%2 != id:
		return m, fmt.Errorf("meta page %d: not the meta page written there", id)
	case m.pageSize < boltMinPageSize || m.pageSize > boltMaxPageSize || m.pageSize&(m.pageSize-1) != 0:
		return m, fmt.Errorf("meta page %d: page size %d", id, m.pageSize)
	case m.pgid < 2 || m.root >= m.pgid || m.freelist >= m.pgid && m.freelist != boltNoFreelist:
		return m, fmt.Errorf("meta page %d: its pages are not below its high-water mark %d", id, m.pgid)
	}
	return m, nil
}

// checkOpenCache is checkMetas on an open cache file.
func checkOpenCache(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := checkMetas(f, fi.Size()); err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	return nil
}
