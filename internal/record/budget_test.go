package record

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
)

// TestBudgetBoundsWhatIsHeld: jobs other than the head wait while the budget is taken; the head
// never waits; a job alone may take more than the whole budget; and jobs that hold part of it
// while they wait for more (the hold-and-wait that deadlocked eight checks of large files) get
// on as the head moves.
func TestBudgetBoundsWhatIsHeld(t *testing.T) {
	b := NewBudget(100)
	b.Acquire(-1, 0, 250) // alone: over the budget, taken
	b.Release(250)

	b.Acquire(0, 0, 60)
	got := make(chan int, 2)
	go func() { b.Acquire(1, 0, 60); got <- 1 }()
	select {
	case <-got:
		t.Fatal("a second job took 60 of a budget of 100 with 60 held")
	case <-time.After(20 * time.Millisecond):
	}
	b.SetHead(1)
	select {
	case <-got:
	case <-time.After(time.Second):
		t.Fatal("the head waits for the budget")
	}
	b.Release(120)

	// Eight jobs, each holding part and asking for more, emitted in order: all finish.
	b = NewBudget(64)
	b.SetHead(0)
	var wg sync.WaitGroup
	var peakOthers atomic.Int64
	done := make([]chan struct{}, 8)
	for i := range done {
		done[i] = make(chan struct{})
	}
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.Acquire(i, 0, 16)
			b.Acquire(i, 16, 40)
			if used := b.Used(); used > peakOthers.Load() {
				peakOthers.Store(used)
			}
			close(done[i])
		}()
	}
	for i := 0; i < 8; i++ {
		select {
		case <-done[i]:
		case <-time.After(5 * time.Second):
			t.Fatalf("job %d never got its budget (a deadlock)", i)
		}
		b.Release(56)
		b.SetHead(i + 1)
	}
	wg.Wait()
	if peak := peakOthers.Load(); peak > 64+56 {
		t.Errorf("jobs held %d at once, want at most the budget (64) and the head's 56", peak)
	}
}

// TestReadAt: a record file is read as a state file: never through a link, never waiting on a
// named pipe, never over its limit, its size reserved before it is read.
func TestReadAt(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ok.json"), []byte(`{"bead":"a"}`), 0o600)
	os.Symlink("ok.json", filepath.Join(dir, "link.json"))
	os.Symlink("/dev/zero", filepath.Join(dir, "zero.json"))
	syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o600)
	os.Mkdir(filepath.Join(dir, "dir.json"), 0o700)
	os.WriteFile(filepath.Join(dir, "big.json"), make([]byte, 2000), 0o600)
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	var reserved int64
	reserve := func(n int64) error { reserved += n; return nil }
	if b, err := ReadAt(fd, "ok.json", 1000, nil, reserve); err != nil || string(b) != `{"bead":"a"}` || reserved != 12 {
		t.Errorf("ReadAt(ok.json) = %q, %v, reserved %d; want the record, 12 reserved", b, err, reserved)
	}
	for name, want := range map[string]string{
		"link.json": "symbolic link", "zero.json": "symbolic link", "fifo.json": "a named pipe",
		"dir.json": "a directory", "big.json": "over the 1000 B limit", "missing.json": "no such file",
	} {
		reserved = 0
		_, err := ReadAt(fd, name, 1000, nil, reserve)
		if err == nil || !contains(err.Error(), want) || reserved != 0 {
			t.Errorf("ReadAt(%s) = %v, reserved %d; want an error saying %q, nothing reserved", name, err, reserved, want)
		}
	}
	if _, err := ReadAt(fd, "big.json", 1000, nil, nil); !errors.Is(err, fsx.ErrTooLarge) {
		t.Errorf("ReadAt(over the limit) = %v, want fsx.ErrTooLarge", err)
	}
	refuse := errors.New("over the bead's share")
	if _, err := ReadAt(fd, "ok.json", 1000, nil, func(int64) error { return refuse }); err != refuse {
		t.Errorf("ReadAt(reserve refuses) = %v, want its error", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
