package attempt

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestKeepLog: the previous attempt's log is archived without being read into memory (a hard
// link, else a streaming copy across file systems), and only a regular file is (issue 9, items
// 1, 2 and 10).
func TestKeepLog(t *testing.T) {
	src := filepath.Join(t.TempDir(), "bd.log")
	os.WriteFile(src, []byte("the agent's output\n"), 0o600)
	dirs := map[string]string{"same file system": filepath.Dir(src)}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "keeplog"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			dirs["another file system"] = d
		}
	}
	for name, dir := range dirs {
		dst := filepath.Join(dir, "output-1.log")
		os.WriteFile(dst, []byte("an older archive of attempt 1\n"), 0o600) // replaced
		if err := keepLog(src, dst); err != nil {
			t.Fatalf("%s: keepLog = %v", name, err)
		}
		if b, err := os.ReadFile(dst); err != nil || string(b) != "the agent's output\n" {
			t.Errorf("%s: archived %q, %v", name, b, err)
		}
		if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: archived with mode %v", name, fi.Mode())
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".output-1.log.tmp-*")); len(left) > 0 {
			t.Errorf("%s: temp files left: %v", name, left)
		}
	}

	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.log")
	syscall.Mkfifo(fifo, 0o600)
	link := filepath.Join(dir, "link.log")
	os.Symlink(src, link)
	for _, bad := range []string{fifo, link, filepath.Join(dir, "missing.log")} {
		dst := bad + ".kept"
		done := make(chan error, 1)
		go func() { done <- keepLog(bad, dst) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("keepLog(%s) = %v, want nothing kept and no error", bad, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("keepLog(%s) blocks", bad)
		}
		if _, err := os.Lstat(dst); err == nil {
			t.Errorf("keepLog(%s) kept something", bad)
		}
	}
}
