package supervise

// The system calls, by their numbers on arm64, in which a process waits to read: a read of a
// file descriptor (its first argument), and a poll or select of some.
var (
	sysRead = map[int]bool{63: true, 67: true, 65: true, 69: true}  // read, pread64, readv, preadv
	sysPoll = map[int]bool{72: true, 73: true, 22: true, 441: true} // pselect6, ppoll, epoll_pwait, epoll_pwait2
)
