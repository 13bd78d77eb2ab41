package fsx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestWriteFileAtomicReplacesAndKeepsMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.json")
	if err := WriteFileAtomic(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "two" {
		t.Errorf("content = %q, want %q", got, "two")
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temp left behind)", len(entries))
	}
}

func TestWriteFileAtomicMissingDirLeavesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "rec.json")
	if err := WriteFileAtomic(path, []byte("x"), 0o600); err == nil {
		t.Fatal("WriteFileAtomic into a missing directory succeeded, want an error")
	}
}

func TestLockExcludesAndTimesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.json")
	unlock, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, path); !errors.Is(err, ErrLocked) {
		t.Errorf("second Lock = %v, want ErrLocked", err)
	}
	unlock()
	unlock2, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatalf("Lock after unlock = %v", err)
	}
	unlock2()
}

func TestWriteLockedConcurrentWritersNeverTear(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.json")
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			data := []byte(fmt.Sprintf("writer-%02d", i))
			if err := WriteLocked(context.Background(), path, data, 0o600); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	got, _ := os.ReadFile(path)
	if len(got) != len("writer-00") {
		t.Errorf("content = %q, want one whole writer's data", got)
	}
}

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	os.WriteFile(small, []byte(`{"a":1}`), 0o600)
	if b, err := ReadFileLimit(small, 100); err != nil || string(b) != `{"a":1}` {
		t.Errorf("ReadFileLimit(small) = %q, %v", b, err)
	}
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, nil, 0o600)
	if b, err := ReadFileLimit(empty, 100); err != nil || len(b) != 0 {
		t.Errorf("ReadFileLimit(empty) = %q, %v", b, err)
	}
	if _, err := ReadFileLimit(small, 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFileLimit(over the limit) = %v, want ErrTooLarge", err)
	}
	if _, err := ReadFileLimit(filepath.Join(dir, "none"), 100); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFileLimit(missing) = %v, want ErrNotExist", err)
	}
	if _, err := ReadFileLimit(dir, 100); err == nil || err.Error() != "not a regular file (a directory)" {
		t.Errorf("ReadFileLimit(directory) = %v", err)
	}
	// A FIFO with no writer must not block the reader.
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFileLimit(fifo, 100); done <- err }()
	select {
	case err := <-done:
		if err == nil || err.Error() != "not a regular file (a named pipe)" {
			t.Errorf("ReadFileLimit(fifo) = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFileLimit(fifo) blocked")
	}
}

func TestNamesSortsWhatItLists(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"bd-1.json", "bd-1-x.json", ".tmp.json", "notes.txt"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o600)
	}
	got, err := Names(dir, func(n string) (string, bool) {
		base, ok := strings.CutSuffix(n, ".json")
		return base, ok && !strings.HasPrefix(n, ".")
	})
	// Sorted after the suffix is cut: "bd-1" < "bd-1-x", though "bd-1-x.json" < "bd-1.json".
	if want := []string{"bd-1", "bd-1-x"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %q, %v; want %q", got, err, want)
	}
	if _, err := Names(filepath.Join(dir, "none"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Names(missing) = %v, want ErrNotExist", err)
	}
}

func TestLockNeverFollowsALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	lock := filepath.Join(dir, "bead.lock")
	if err := os.Symlink(target, lock); err != nil {
		t.Fatal(err)
	}
	if unlock, err := LockFile(context.Background(), lock); err == nil {
		unlock()
		t.Error("LockFile took a lock through a symbolic link")
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("LockFile created the link's target")
	}
	// A FIFO planted as a lock file does not hang the lock.
	fifo := filepath.Join(dir, "fifo.lock")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan struct{})
	go func() {
		if unlock, err := LockFile(context.Background(), fifo); err == nil {
			unlock()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("LockFile hung on a FIFO")
	}
}

func TestReadOfAStreamThatWouldBlockFails(t *testing.T) {
	// /proc/self/fd/N of a pipe's read end is not regular; /proc/kmsg is "regular" and would
	// block, but reading it needs root. A pipe through /dev/fd shows the EAGAIN path only as
	// root, so this checks the general rule: no read of a non-plain file ever hangs.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	done := make(chan error, 1)
	go func() {
		_, err := ReadFileLimit(fmt.Sprintf("/proc/self/fd/%d", r.Fd()), 1<<20)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("reading a pipe succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFileLimit hung on a pipe")
	}
	if os.Getuid() == 0 {
		if _, err := os.Stat("/proc/kmsg"); err == nil {
			go func() { _, err := ReadFileLimit("/proc/kmsg", 1<<20); done <- err }()
			select {
			case err := <-done:
				if err == nil {
					t.Log("/proc/kmsg had data to read")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("ReadFileLimit spun on /proc/kmsg")
			}
		}
	}
}

func TestWriteFileAtomicLazy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.json")
	if err := WriteFileAtomic(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o640)
	syncDir, err := WriteFileAtomicLazy(path, []byte("new"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	// Renamed in place before the directory's fsync: readers see the new content at once.
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(got) != "new" || fi.Mode().Perm() != 0o640 {
		t.Errorf("before syncDir: %q, mode %v; want %q, 0640 kept", got, fi.Mode().Perm(), "new")
	}
	syncDir()
	if names, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".queue.json.tmp-*")); len(names) != 0 {
		t.Errorf("temp files left: %v", names)
	}
	// A write that fails leaves no syncDir to call and the old content.
	if syncDir, err := WriteFileAtomicLazy(filepath.Join(path, "sub"), []byte("x"), 0o600); err == nil || syncDir != nil {
		t.Errorf("write under a file: err %v, syncDir %v", err, syncDir != nil)
	}
}
