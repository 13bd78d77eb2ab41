package supervise

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/proc"
	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes this process the child subreaper of everything it starts: a process
// the agent leaves behind (a child that ignores SIGTERM, a daemon started with setsid) is
// re-parented here when its parent dies, instead of to PID 1, so the supervisor can find it
// and stop it when the attempt ends.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// killSettle bounds how long the reaping waits, after SIGKILL, for the processes it killed to
// end: one stuck in the kernel (an uninterruptible wait on a dead NFS server) ends only when
// the kernel lets it, and the attempt's end must not wait for that.
const killSettle = 5 * time.Second

// reapStragglers stops every process still descending from this one: TERM, then KILL once
// killAt has passed, repeated until none is left (a killed parent re-parents its children
// here), so a straggler that ignores TERM is killed however long the grace period. It must run
// only when the supervisor has no child of its own to wait for: it reaps what it finds. It
// returns how many processes it stopped.
func reapStragglers(killAt time.Time) int {
	if !hasChildren() {
		return 0 // the common case, without a scan of every process in /proc
	}
	stopped := map[int]bool{}
	var giveUp time.Time
	for {
		kids := children(os.Getpid())
		if len(kids) == 0 {
			break
		}
		now := time.Now()
		sig := syscall.SIGTERM
		if !now.Before(killAt) {
			sig = syscall.SIGKILL
			if giveUp.IsZero() {
				giveUp = now.Add(killSettle)
			} else if now.After(giveUp) {
				break
			}
		}
		for _, pid := range kids {
			if !stopped[pid] || sig == syscall.SIGKILL {
				syscall.Kill(pid, sig)
			}
			stopped[pid] = true
		}
		// Collect the ones that ended, so they do not linger as zombies and are not counted
		// again; the others get the rest of the grace period, looked at again every 100 ms
		// (their children, re-parented here, need their TERM too).
		wait := now.Add(100 * time.Millisecond)
		if sig == syscall.SIGTERM && killAt.Before(wait) {
			wait = killAt
		}
		for time.Now().Before(wait) {
			if reapSome(kids) == len(kids) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return len(stopped)
}

// hasChildren reports whether this process has a child, live or ended, collecting the ended
// ones on the way.
func hasChildren() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			return false // ECHILD: none at all
		case pid == 0:
			return true // some, still running
		}
		// pid > 0: an ended child collected; look again.
	}
}

// reapSome waits for those of pids that ended, without blocking, and returns how many did.
func reapSome(pids []int) int {
	n := 0
	for _, pid := range pids {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if got == pid || errors.Is(err, syscall.ECHILD) {
			n++
		}
	}
	return n
}

// children lists the live processes whose parent is ppid, from /proc, and collects those of
// them that already ended (zombies), which need no signal.
func children(ppid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var kids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		st, ok := proc.ReadStat(pid)
		switch {
		case !ok || st.PPID != ppid:
		case st.State == 'Z':
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		default:
			kids = append(kids, pid)
		}
	}
	return kids
}
