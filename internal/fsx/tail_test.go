package fsx

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestReadTail(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "agent.log")
	if err := os.WriteFile(log, []byte("first line\nlast line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		n    int64
		want string
	}{{10, "last line\n"}, {1 << 20, "first line\nlast line\n"}, {0, ""}} {
		if got, err := ReadTail(log, tt.n); err != nil || string(got) != tt.want {
			t.Errorf("ReadTail(%d) = %q, %v; want %q", tt.n, got, err, tt.want)
		}
	}
	// What a hostile state directory holds instead of a log: none is read, none blocks.
	link := filepath.Join(dir, "link.log")
	os.Symlink(log, link)
	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, fifo, dir, filepath.Join(dir, "missing.log")} {
		if b, err := ReadTail(p, 100); err == nil {
			t.Errorf("ReadTail(%s) = %q, want an error", filepath.Base(p), b)
		}
	}
}
