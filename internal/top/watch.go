package top

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"golang.org/x/sys/unix"
)

// Watch tells, on the channel it returns, that a state file top reads has changed (coalesced:
// one message for a burst), so that a view refreshes at once instead of polling faster: the
// directories of state.json, the loops' and AIWG loops' states, the supervisors' registries,
// the run and result records and the queues (inotify; a directory made later is watched from
// the next call of Rearm). The channel closes when ctx ends.
func (m *Model) Watch(ctx context.Context) (<-chan struct{}, func(), error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fd), "inotify")
	rearm := func() {
		for _, d := range m.watched() {
			// Adding a directory watched already changes nothing; one that is not there fails.
			unix.InotifyAddWatch(fd, d, unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO|unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM)
		}
	}
	rearm()
	out := make(chan struct{}, 1)
	raw := make(chan struct{}, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := f.Read(buf); err != nil {
				close(raw)
				return
			}
			select {
			case raw <- struct{}{}:
			default:
			}
		}
	}()
	go func() {
		defer close(out)
		defer f.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-raw:
				if !ok {
					return
				}
			}
			// Writers replace files in bursts (a temp file, then the rename): one message.
			select {
			case <-ctx.Done():
				return
			case <-time.After(30 * time.Millisecond):
			}
			select {
			case <-raw:
			default:
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out, rearm, nil
}

// watched are the directories whose entries' changes change rows.
func (m *Model) watched() []string {
	var dirs []string
	if m.sw != nil {
		sd := m.sw.Dir()
		dirs = append(dirs, sd.Root, sd.Ralph(), filepath.Join(sd.Supervise(), "supervisors"))
		if names, err := os.ReadDir(sd.Ralph()); err == nil {
			for _, n := range names {
				dirs = append(dirs, filepath.Join(sd.Ralph(), n.Name()))
			}
		}
	}
	if m.src.StateDir != "" {
		for _, sub := range []string{"runs", "results", "supervisors"} {
			dirs = append(dirs, filepath.Join(m.src.StateDir, sub))
		}
	}
	if m.src.Workspace != "" {
		ws := aiwg.FindWorkspace(m.src.Workspace)
		dirs = append(dirs, ws.Dir(), filepath.Join(ws.Root, ".claude", "ralph"))
		for _, id := range ws.Loops() {
			dirs = append(dirs, ws.LoopDir(id))
		}
	}
	return dirs
}
