package top

import (
	"sync"

	"golang.org/x/sys/unix"
)

// A refresh reads hundreds of small records that seldom change. files keeps each one's parse
// with the identity of the file it came from (device, inode, size, modification and change
// times): while a stat says the same, the parse is used again. Writers replace a record by a
// rename (a new inode), so a changed record is never mistaken for the one cached. An entry not
// asked for in a refresh is dropped at its end.
type files struct {
	mu  sync.Mutex
	m   map[string]*cached
	gen int
}

type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}

type cached struct {
	id  fileID
	v   any
	gen int
}

// identity is path's identity, false when it is not a regular file (or not there).
func identity(path string) (fileID, bool) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}, true
}

// readCached is read(path), or the value it gave for the same file before. An error is not
// kept. The value is shared: callers do not change it.
func readCached[T any](f *files, path string, read func(string) (T, error)) (T, error) {
	id, ok := identity(path)
	if !ok {
		return read(path) // the reader's own error (not there, not a regular file)
	}
	f.mu.Lock()
	c := f.m[path]
	if c != nil && c.id == id {
		c.gen = f.gen
		f.mu.Unlock()
		return c.v.(T), nil
	}
	f.mu.Unlock()
	v, err := read(path)
	if err != nil {
		return v, err
	}
	// The identity taken before the read: if the file was replaced meanwhile, the next refresh
	// sees a new identity and reads it again.
	f.mu.Lock()
	f.m[path] = &cached{id: id, v: v, gen: f.gen}
	f.mu.Unlock()
	return v, nil
}

// sweep ends a refresh: what it did not ask for is dropped.
func (f *files) sweep() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, c := range f.m {
		if c.gen != f.gen {
			delete(f.m, p)
		}
	}
	f.gen++
}
