//go:build !(linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64))

package record

// StatNameAt is StatAt of the file name+suffix in dirfd (the allocation-free version is for
// 64-bit Linux, where fstatat's number and Stat_t are the same).
func StatNameAt(dirfd int, name, suffix string, _ *[]byte) (FileID, bool) {
	return StatAt(dirfd, name+suffix)
}
