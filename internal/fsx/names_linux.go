//go:build linux

package fsx

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
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
	first := at(refs[0])
	p := len(first)
	for _, r := range refs[1:] {
		p = sharedPrefix(p, first, at(r))
	}
	for i := range refs {
		refs[i].key = sortKey(at(refs[i]), p)
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
	sortTies(names, refs)
	return names
}
