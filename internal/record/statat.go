//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64)

package record

import (
	"bytes"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StatNameAt is StatAt of the file name+suffix in dirfd, its name built in *scratch (which the
// caller keeps from call to call) rather than in new strings: a scan through analyze-runs' cache
// stats two million files, and the two allocations unix.Fstatat and the concatenation made for
// each were four million objects for the garbage collector (issue 22).
func StatNameAt(dirfd int, name, suffix string, scratch *[]byte) (id FileID, ok bool) {
	b := append(append(append((*scratch)[:0], name...), suffix...), 0)
	*scratch = b
	if bytes.IndexByte(b[:len(b)-1], 0) >= 0 {
		return FileID{}, false // no file has a NUL in its name (unix.Fstatat: EINVAL)
	}
	var st unix.Stat_t
	for {
		_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return FileID{}, false
		}
		return FileID{Ino: int64(st.Ino), Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, true
	}
}
