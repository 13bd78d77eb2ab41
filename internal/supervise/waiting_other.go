//go:build !amd64 && !arm64

package supervise

// Elsewhere the system calls' numbers are not listed here: the wait channel tells.
var sysRead, sysPoll map[int]bool
