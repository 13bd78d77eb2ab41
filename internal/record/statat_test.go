package record

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestStatNameAt: StatNameAt gives what StatAt gives for name+suffix (a regular file's identity;
// nothing for a link, which is not followed, a directory, a missing file or a name with a NUL),
// and, once its scratch has grown, allocates nothing: a scan through analyze-runs' cache makes
// two million of these calls (issue 22).
func TestStatNameAt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bd-1.json"), []byte(`{"bead":"bd-1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bd-1.json", filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)

	var scratch []byte
	for _, name := range []string{"bd-1", "link", "sub", "missing", "bd-1\x00", "bd\x00-1"} {
		want, wantOK := StatAt(fd, name+".json")
		got, ok := StatNameAt(fd, name, ".json", &scratch)
		if got != want || ok != wantOK {
			t.Errorf("StatNameAt(%q) = %+v, %v; StatAt gives %+v, %v", name, got, ok, want, wantOK)
		}
	}
	if _, ok := StatNameAt(fd, "bd-1", ".json", &scratch); !ok {
		t.Fatal("bd-1.json: no identity")
	}
	if n := testing.AllocsPerRun(100, func() { StatNameAt(fd, "bd-1", ".json", &scratch) }); n != 0 {
		t.Errorf("StatNameAt allocates %v times a call, want 0", n)
	}
}
