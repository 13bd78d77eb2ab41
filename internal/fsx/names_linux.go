//go:build linux

package fsx

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// direntBuf is the buffer SuffixNames reads directory entries into: a million-name directory
// is about 30 getdents64 calls, not os.File's 4,000 of 8 KiB.
const direntBuf = 1 << 20

// SuffixNames lists the names in dir that end in suffix, are not hidden and have something
// before the suffix, without the suffix, sorted: Names(dir, pick) with pick that cut. It is the
// listing of a state directory's records made for a million of them (issue 22): the entries are
// read by getdents64 into one large buffer, the names kept in one block of memory rather than a
// string each, and sorted by radix as SortNames does; the strings returned all point into that
// block, laid out in their sorted order. os.File.Readdirnames took 1.3 s of CPU and 85 MB for
// runs/ and results/ of a million pairs.
//
// A missing directory is an error satisfying errors.Is(err, os.ErrNotExist).
func SuffixNames(dir, suffix string) ([]string, error) {
	return suffixNames(dir, suffix, direntBuf)
}

// nameRef is a name in a listing's block, with its sort key (SortNames' key).
type nameRef struct {
	key uint64
	off uint32
	n   uint32
}

func suffixNames(dir, suffix string, bufSize int) ([]string, error) {
	fd, err := openDirFd(dir)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, bufSize)
	var block []byte
	var refs []nameRef
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "readdir", Path: dir, Err: err}
		}
		if n <= 0 {
			break
		}
		// struct linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), d_name
		// (NUL-terminated, padded to d_reclen).
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, &os.PathError{Op: "readdir", Path: dir, Err: errors.New("malformed directory entry")}
			}
			ino := binary.NativeEndian.Uint64(b[0:8])
			name := b[19:reclen]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if ino == 0 || len(name) <= len(suffix) || name[0] == '.' || string(name[len(name)-len(suffix):]) != suffix {
				continue
			}
			name = name[:len(name)-len(suffix)]
			if len(block)+len(name) > 1<<32-1 {
				return nil, &os.PathError{Op: "readdir", Path: dir, Err: errors.New("too many names to list")}
			}
			refs = append(refs, nameRef{off: uint32(len(block)), n: uint32(len(name))})
			block = append(block, name...)
		}
	}
	return sortedNames(block, refs), nil
}

// openDirFd opens a directory to list it.
func openDirFd(dir string) (int, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// sortedNames returns the names refs locates in block, sorted, as strings into one new block
// holding them in that order.
func sortedNames(block []byte, refs []nameRef) []string {
	if len(refs) == 0 {
		return nil
	}
	at := func(r nameRef) []byte { return block[r.off : r.off+r.n] }
	// The bytes every name begins with ("bd-") order nothing: the keys are the eight after them.
	first := at(refs[0])
	p := len(first)
	for _, r := range refs[1:] {
		name := at(r)
		p = min(p, len(name))
		for j := 0; j < p; j++ {
			if name[j] != first[j] {
				p = j
				break
			}
		}
	}
	for i := range refs {
		name := at(refs[i])
		var k uint64
		for j := p; j < p+8; j++ {
			k <<= 8
			if j < len(name) {
				k |= uint64(name[j])
			}
		}
		refs[i].key = k
	}
	radixSort(refs)
	sorted := make([]byte, 0, len(block))
	names := make([]string, len(refs))
	for _, r := range refs {
		sorted = append(sorted, at(r)...)
	}
	// The strings share sorted, which is never written again.
	whole := unsafe.String(unsafe.SliceData(sorted), len(sorted))
	off := 0
	for i, r := range refs {
		names[i] = whole[off : off+int(r.n)]
		off += int(r.n)
	}
	// Names with the same first eight bytes are next to each other; their order is the rest's.
	for i := 0; i < len(refs); {
		j := i + 1
		for j < len(refs) && refs[j].key == refs[i].key {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(names[i:j], strings.Compare)
		}
		i = j
	}
	return names
}

// radixSort sorts refs by key, stably, one byte at a time from the lowest; a byte every key has
// the same is skipped.
func radixSort(refs []nameRef) {
	tmp := make([]nameRef, len(refs))
	a := refs
	for shift := 0; shift < 64; shift += 8 {
		var count [256]int
		for _, r := range a {
			count[byte(r.key>>shift)]++
		}
		if count[byte(a[0].key>>shift)] == len(a) {
			continue
		}
		pos := 0
		for b, c := range count {
			count[b] = pos
			pos += c
		}
		for _, r := range a {
			d := byte(r.key >> shift)
			tmp[count[d]] = r
			count[d]++
		}
		a, tmp = tmp, a
	}
	if &a[0] != &refs[0] {
		copy(refs, a)
	}
}
