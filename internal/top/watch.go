package top

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"golang.org/x/sys/unix"
)

// Watch tells, on the channel it returns, that a state file top reads has changed (coalesced:
// one message for a burst), so that a view refreshes at once instead of polling faster: the
// directories of state.json, the loops' and AIWG loops' states, the supervisors' registries,
// the run and result records and the queues (inotify). A directory that is not there yet is
// watched through its nearest ancestor that is, for the making of the next directory toward
// it (the first dispatch into a new state directory, a workspace's first AIWG loop or queue);
// the directories made since, and new loops' directories, are watched from the next call of
// rearm, which a view makes before each refresh (what changes between the two is then read by
// the refresh). The channel closes when ctx ends.
func (m *Model) Watch(ctx context.Context) (<-chan struct{}, func(), error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fd), "inotify")
	w := &watches{all: map[int32]bool{}, toward: map[int32]map[string]bool{}}
	rearm := func() {
		for _, d := range m.watched() {
			w.add(fd, d)
		}
	}
	rearm()
	out := make(chan struct{}, 1)
	raw := make(chan struct{}, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			if err != nil {
				close(raw)
				return
			}
			if !w.counts(buf[:n]) {
				continue
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

// watchMask: a file written or renamed into place, an entry made or removed.
const watchMask = unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM

// watches are the inotify watches: all, the directories top reads, whose every event counts;
// toward, the ancestors of directories not there yet, whose events count only for the names
// on the way to them.
type watches struct {
	mu     sync.Mutex
	all    map[int32]bool
	toward map[int32]map[string]bool
}

func (w *watches) add(fd int, dir string) {
	// Adding a directory watched already changes nothing.
	wd, err := unix.InotifyAddWatch(fd, dir, watchMask)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.all[int32(wd)] = true
		return
	}
	for child, p := filepath.Base(dir), filepath.Dir(dir); ; child, p = filepath.Base(p), filepath.Dir(p) {
		if wd, err := unix.InotifyAddWatch(fd, p, watchMask); err == nil {
			if w.toward[int32(wd)] == nil {
				w.toward[int32(wd)] = map[string]bool{}
			}
			w.toward[int32(wd)][child] = true
			return
		}
		if filepath.Dir(p) == p {
			return
		}
	}
}

// counts reports whether one of the events read (buf) tells of a change top reads.
func (w *watches) counts(buf []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		wd := int32(binary.NativeEndian.Uint32(buf[off:]))
		n := int(binary.NativeEndian.Uint32(buf[off+12:]))
		name := buf[off+unix.SizeofInotifyEvent : min(len(buf), off+unix.SizeofInotifyEvent+n)]
		off += unix.SizeofInotifyEvent + n
		if wd < 0 || w.all[wd] || w.toward[wd][string(bytes.TrimRight(name, "\x00"))] {
			return true // wd -1: the queue overflowed, something may have been missed
		}
	}
	return false
}

// watched are the directories whose entries' changes change rows.
func (m *Model) watched() []string {
	var dirs []string
	if m.sw == nil && m.src.SwarmDir != "" {
		dirs = append(dirs, m.src.SwarmDir) // not there yet, or not opened yet
	}
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
		dirs = append(dirs, ws.Dir(), filepath.Join(ws.Dir(), "loops"), filepath.Join(ws.Root, ".claude", "ralph"))
		for _, id := range ws.Loops() {
			dirs = append(dirs, ws.LoopDir(id))
		}
	}
	return dirs
}
