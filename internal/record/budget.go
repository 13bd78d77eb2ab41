package record

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/agentfleet/fleet/internal/fsx"
	"golang.org/x/sys/unix"
)

// Budget bounds the memory that readers working in parallel hold for the records they read and
// what they build from them. Each reader reserves what a record will cost before it reads it
// (the size is known from fstat, so the bound is checked before the read) and waits while the
// others hold the rest. Without it, eight workers each holding a 16 MiB record of 1.6 million
// keys took 9 GB.
//
// Readers whose results are emitted in order (ordered.Map) may hold their reservations until
// their result is emitted; then the head, the job to be emitted next, never waits (SetHead),
// or the jobs after it could hold the whole budget while it waits for them.
//
// A reservation that fits is one atomic add: readers of ordinary records (a few kilobytes,
// tens of thousands a second) take no lock and wake no one. The lock and the condition are
// only for a reservation that does not fit, and Release and SetHead signal only when someone
// waits (issue 22: a mutex and a broadcast per record cost more than the reading).
type Budget struct {
	used    atomic.Int64
	head    atomic.Int64
	waiters atomic.Int64 // readers in Acquire's slow path
	limit   int64
	mu      sync.Mutex
	cond    sync.Cond
}

// NewBudget returns a budget of limit bytes, with no head.
func NewBudget(limit int64) *Budget {
	b := &Budget{limit: limit}
	b.head.Store(-1)
	b.cond.L = &b.mu
	return b
}

// Acquire reserves n bytes for job seq (-1: none in particular), which already holds held. It
// waits while other jobs hold bytes and n more would exceed the limit, unless seq is the head: a
// job alone may exceed it, so a cost larger than the whole budget is taken once the others are
// done.
func (b *Budget) Acquire(seq int, held, n int64) {
	if b == nil || n <= 0 {
		return
	}
	for {
		used := b.used.Load()
		if used+n > b.limit {
			break
		}
		if b.used.CompareAndSwap(used, used+n) {
			return
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Counted as a waiter before the condition is checked again: a Release that read no waiters
	// released before this check, which then sees what it gave back; one that read a waiter
	// broadcasts under the lock, so not before Wait has let it go.
	b.waiters.Add(1)
	defer b.waiters.Add(-1)
	for {
		used := b.used.Load()
		if used-held <= 0 || used+n <= b.limit || (seq >= 0 && int64(seq) == b.head.Load()) {
			if b.used.CompareAndSwap(used, used+n) {
				return
			}
			continue
		}
		b.cond.Wait()
	}
}

// Release gives back n bytes.
func (b *Budget) Release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.used.Add(-n)
	b.wake()
}

// SetHead says job seq is the next to be emitted: it no longer waits.
func (b *Budget) SetHead(seq int) {
	if b == nil {
		return
	}
	b.head.Store(int64(seq))
	b.wake()
}

// wake wakes the readers waiting in Acquire, if there are any.
func (b *Budget) wake() {
	if b.waiters.Load() == 0 {
		return
	}
	b.mu.Lock()
	b.cond.Broadcast()
	b.mu.Unlock()
}

// Used is what is reserved now.
func (b *Budget) Used() int64 {
	return b.used.Load()
}

// ReadAt reads the file name in the open directory dirfd (or fsx.Cwd) as a record file of a
// state directory: a regular file of at most limit bytes, never through a final symbolic link
// (nor a named pipe, on which it does not wait), into buf when it is large enough. Once the
// file's size is known and before it is read, reserve (when not nil) is called with it; an
// error it returns is returned, the file unread.
//
// It is fsx.ReadFileAt (four system calls a file: validate-state reads tens of thousands a
// second) with O_NOFOLLOW and the reservation, which fsx does not offer.
func ReadAt(dirfd int, name string, limit int64, buf []byte, reserve func(size int64) error) ([]byte, error) {
	b, _, err := ReadAtID(dirfd, name, limit, buf, reserve)
	return b, err
}

// FileID tells one version of a file from another without reading it: its inode (every writer of
// records replaces a file by renaming a new one into place), its size, and its modification and
// change times in nanoseconds (an edit in place changes both; a touch that sets the modification
// time back still changes the change time). Cache's entries are checked against it.
type FileID struct {
	Ino, Size    int64
	Mtime, Ctime int64 // nanoseconds since the epoch
}

// fileID is st's FileID.
func fileID(st *syscall.Stat_t) FileID {
	return FileID{Ino: int64(st.Ino), Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
}

// StatAt is the FileID of the file name in the open directory dirfd, by one fstatat(2) that does
// not follow a final symbolic link: the link's own, which no record read ever has. ok is false
// when there is nothing there or it is not a regular file.
func StatAt(dirfd int, name string) (id FileID, ok bool) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return FileID{}, false
		}
		return FileID{Ino: int64(st.Ino), Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, true
	}
}

// ReadAtID is ReadAt that also returns the FileID of what it read, from the same fstat (no
// system call more): the version of the file the bytes are, even when it is replaced meanwhile.
func ReadAtID(dirfd int, name string, limit int64, buf []byte, reserve func(size int64) error) ([]byte, FileID, error) {
	b, st, err := readAt(dirfd, name, limit, buf, reserve)
	if err != nil {
		return nil, FileID{}, err
	}
	return b, fileID(st), nil
}

func readAt(dirfd int, name string, limit int64, buf []byte, reserve func(size int64) error) ([]byte, *syscall.Stat_t, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.ELOOP {
		return nil, nil, ErrLink
	}
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, nil, fmt.Errorf("not a regular file (%s)", fsx.FileType(st.Mode))
	}
	if st.Size > limit {
		return nil, nil, fmt.Errorf("%w: %s, over the %s limit", fsx.ErrTooLarge, fsx.HumanBytes(st.Size), fsx.HumanBytes(limit))
	}
	if reserve != nil {
		if err := reserve(st.Size); err != nil {
			return nil, nil, err
		}
	}
	// One byte more than the size: a read that fills it means the file grew since fstat.
	if int64(cap(buf)) >= st.Size+1 {
		buf = buf[:st.Size+1]
	} else {
		buf = make([]byte, st.Size+1)
	}
	n := 0
	for {
		k, err := syscall.Read(fd, buf[n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return nil, nil, &os.PathError{Op: "read", Path: name, Err: errors.New("would block: not a plain file")}
		case err != nil:
			return nil, nil, &os.PathError{Op: "read", Path: name, Err: err}
		case k == 0:
			return buf[:n], &st, nil
		}
		n += k
		if int64(n) == st.Size {
			return buf[:n], &st, nil // records are replaced by rename, never grown in place
		}
		if n == len(buf) {
			// It grew: it is not one of the records, which are replaced by rename.
			return nil, nil, fmt.Errorf("%w: it grew while it was read", fsx.ErrTooLarge)
		}
	}
}

// ErrLink is returned by ReadAt for a symbolic link, which is not followed: a link planted in
// a state directory must not make the tools read what its owner chooses.
var ErrLink = errors.New("a symbolic link, which is not followed")
