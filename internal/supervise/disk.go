package supervise

import (
	"crypto/rand"
	"os"
	"syscall"

	"github.com/agentfleet/fleet/internal/statedir"
)

// reserveSize is disk space the supervisor holds from the start and frees just before the
// final records are written, so that an agent that fills the disk cannot keep its outcome from
// being written.
const reserveSize = 256 << 10

// lowDisk reports whether a file system of the attempt's disk directories has less free space
// than its floor.
func lowDisk(a *Attempt) bool {
	if a.MinFreeMB <= 0 {
		return false
	}
	for _, dir := range a.DiskDirs {
		if free, err := FreeMB(dir); err == nil && free < a.MinFreeMB {
			return true
		}
	}
	return false
}

// FreeMB is the space available to an unprivileged user on dir's file system, in MB.
func FreeMB(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize) / (1 << 20), nil
}

// holdReserve takes reserveSize bytes of disk in a file created fresh at path (whatever was
// there is removed, never followed). fallocate reserves real blocks even on file systems that
// compress or deduplicate; where it is not supported, bytes that do not compress are written.
func holdReserve(path string) error {
	f, err := createReserve(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return allocate(f)
}

// createReserve creates a reserve's file fresh at path, never following what was there.
func createReserve(path string) (*os.File, error) {
	if err := statedir.MkdirFor(path); err != nil {
		return nil, err
	}
	os.Remove(path)
	return os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
}

// allocate makes f hold reserveSize bytes of disk.
func allocate(f *os.File) error {
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, reserveSize); err == nil {
		return nil
	}
	noise := make([]byte, reserveSize)
	rand.Read(noise)
	if _, err := f.WriteAt(noise, 0); err != nil {
		return err
	}
	return f.Sync()
}

// Reserve is the disk a supervisor serving a slot holds for its attempts' final records: one
// file kept open from attempt to attempt, allocated before each and emptied (its blocks freed)
// just before the records are written, so that no file is created per attempt.
type Reserve struct {
	f    *os.File
	path string
}

// OpenReserve creates the reserve at path (fresh, never following what was there).
func OpenReserve(path string) (*Reserve, error) {
	f, err := createReserve(path)
	if err != nil {
		return nil, err
	}
	return &Reserve{f: f, path: path}, nil
}

func (r *Reserve) hold() error { return allocate(r.f) }

// free gives the space back for the records.
func (r *Reserve) free() { r.f.Truncate(0) }

// Close frees the reserve and removes its file.
func (r *Reserve) Close() {
	r.f.Close()
	os.Remove(r.path)
}
