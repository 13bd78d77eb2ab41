package supervise

// The system calls, by their numbers on amd64, in which a process waits to read: a read of a
// file descriptor (its first argument), and a poll or select of some.
var (
	sysRead = map[int]bool{0: true, 17: true, 19: true, 295: true}                                   // read, pread64, readv, preadv
	sysPoll = map[int]bool{7: true, 23: true, 270: true, 271: true, 232: true, 281: true, 441: true} // poll, select, pselect6, ppoll, epoll_wait, epoll_pwait, epoll_pwait2
)
