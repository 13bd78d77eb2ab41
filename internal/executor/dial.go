package executor

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/remote"
)

// DialOptions say how DialHosts reaches hosts.yaml's hosts and what their executors do.
type DialOptions struct {
	// Repo is the local repository (absolute), StateDir the local state directory the
	// records come back into.
	Repo, StateDir string
	// Version is what the hosts' dispatch must print for `dispatch version` ("dispatch
	// version X", this build's).
	Version string
	// OfflineAfter is how long a host may not answer before it is offline (0: 30 s).
	OfflineAfter time.Duration
	// KillGrace is a host's kill grace, as its dispatch reads it from its env
	// (dispatchenv.HostKillGrace).
	KillGrace func(*remote.Host) time.Duration
	// Log gets each host's dispatch's lines as "<LogPrefix><host>: <line>".
	Log       io.Writer
	LogPrefix string
}

// DialHosts opens one connection to each host of hosts, all at once, checks that each runs
// our dispatch at o.Version, and returns an executor per host, in hosts' order, and the
// function that closes their connections. Its error is the first host's that failed: an
// unreachable one (remote.ErrUnreachable), one without our binaries or at another version
// (remote.ErrVersion). A host's kill grace is o.KillGrace's.
// swarm run --hosts and ralph queue run --hosts both dial this way.
func DialHosts(ctx context.Context, hosts *remote.Hosts, o DialOptions) ([]*Remote, func(), error) {
	offline := remote.OrDefault(o.OfflineAfter, 30*time.Second)
	d, err := remote.NewDialer(remote.Options{ConnectTimeout: min(10*time.Second, offline/2), AliveInterval: max(time.Second, offline/4)})
	if err != nil {
		return nil, nil, err
	}
	execs := make([]*Remote, len(hosts.Hosts))
	errs := make([]error, len(hosts.Hosts))
	var wg sync.WaitGroup
	for i := range hosts.Hosts {
		wg.Go(func() {
			h := &hosts.Hosts[i]
			conn, err := d.Dial(ctx, h)
			if err == nil {
				err = conn.CheckVersion(ctx, "dispatch", o.Version)
			}
			if errs[i] = err; err == nil {
				execs[i] = &Remote{Conn: conn, Repo: o.Repo, StateDir: o.StateDir, OfflineAfter: offline, KillGrace: o.KillGrace(h),
					Log: hostLog{w: o.Log, prefix: o.LogPrefix + h.Name + ": "}}
			}
		})
	}
	wg.Wait()
	// The first host's error, in hosts' order.
	if err := cmp.Or(errs...); err != nil {
		d.Close()
		return nil, nil, err
	}
	return execs, func() { d.Close() }, nil
}

// hostLog writes a host's dispatch's lines, each non-empty one prefixed and made printable
// (remote.Printable: a host's text reaches the terminal without its control sequences).
type hostLog struct {
	w      io.Writer
	prefix string
}

func (h hostLog) Write(b []byte) (int, error) {
	for _, l := range strings.Split(string(b), "\n") {
		if l = remote.Printable(l); l != "" {
			fmt.Fprintf(h.w, "%s%s\n", h.prefix, l)
		}
	}
	return len(b), nil
}
