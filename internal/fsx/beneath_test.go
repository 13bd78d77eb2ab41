package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenDirBeneathRefusesLinks: a link anywhere below the root is refused, never followed,
// and nothing is made through it; missing components are made 0700 with mkdir.
func TestOpenDirBeneathRefusesLinks(t *testing.T) {
	tmp := t.TempDir()
	root, victim := filepath.Join(tmp, "root"), filepath.Join(tmp, "victim")
	os.MkdirAll(filepath.Join(root, "a"), 0o700)
	os.MkdirAll(victim, 0o700)
	if err := os.Symlink(victim, filepath.Join(root, "a", "link")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"a/link", "a/link/b"} {
		if _, err := OpenDirBeneath(root, rel, true); !errors.Is(err, ErrLinkBeneath) || !strings.Contains(err.Error(), "a/link is a symbolic link (to "+victim+")") {
			t.Errorf("OpenDirBeneath(%q) = %v, want ErrLinkBeneath naming the link", rel, err)
		}
	}
	if entries, _ := os.ReadDir(victim); len(entries) != 0 {
		t.Errorf("the link's target got %d entries", len(entries))
	}
	d, err := OpenDirBeneath(root, "a/new/deeper", true)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if fi, err := os.Lstat(filepath.Join(root, "a", "new", "deeper")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("made %v, %v; want a 0700 directory", fi, err)
	}
	if _, err := OpenDirBeneath(root, "../victim", false); err == nil {
		t.Error("OpenDirBeneath(../victim) = nil error")
	}
}

// TestRemoveAtNeverFollows: a link is removed as a link, a directory with links in it is
// removed without touching what they point at.
func TestRemoveAtNeverFollows(t *testing.T) {
	tmp := t.TempDir()
	root, victim := filepath.Join(tmp, "root"), filepath.Join(tmp, "victim")
	os.MkdirAll(filepath.Join(root, "tree", "sub"), 0o700)
	os.MkdirAll(victim, 0o700)
	os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(root, "tree", "sub", "f"), []byte("x"), 0o600)
	os.Symlink(victim, filepath.Join(root, "tree", "sub", "into-victim"))
	os.Symlink(victim, filepath.Join(root, "link"))
	d, err := OpenDirBeneath(root, ".", false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range []string{"link", "tree"} {
		if existed, err := RemoveAt(d, name); !existed || err != nil {
			t.Errorf("RemoveAt(%s) = %v, %v", name, existed, err)
		}
		if _, err := os.Lstat(filepath.Join(root, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
		t.Errorf("the links' target lost its file: %v", err)
	}
	if existed, err := RemoveAt(d, "missing"); existed || err != nil {
		t.Errorf("RemoveAt(missing) = %v, %v", existed, err)
	}
}
