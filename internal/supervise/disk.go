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
	if err := statedir.MkdirFor(path); err != nil {
		return err
	}
	os.Remove(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, reserveSize); err == nil {
		return nil
	}
	noise := make([]byte, reserveSize)
	rand.Read(noise)
	if _, err := f.Write(noise); err != nil {
		return err
	}
	return f.Sync()
}
