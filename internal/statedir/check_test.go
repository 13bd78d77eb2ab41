package statedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	root := t.TempDir()
	d := Dir{Root: filepath.Join(root, "state")}
	if err := d.Check(); err != nil {
		t.Errorf("Check(missing state directory) = %v, want nil", err)
	}
	if err := MkdirFor(d.Run("bd-1")); err != nil {
		t.Fatal(err)
	}
	if err := d.Check(); err != nil {
		t.Errorf("Check(fresh state directory) = %v", err)
	}
	// The state directory itself may be reached through a link.
	if err := os.Symlink(d.Root, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := (Dir{Root: filepath.Join(root, "linked")}).Check(); err != nil {
		t.Errorf("Check(state directory through a link) = %v", err)
	}

	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, d.Logs()); err != nil {
		t.Fatal(err)
	}
	err := d.Check()
	if err == nil || !strings.Contains(err.Error(), d.Logs()+" is a symbolic link") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Check(logs/ a link) = %v; want one line naming it", err)
	}
	if err := MkdirFor(d.Log("bd-1")); err == nil {
		t.Errorf("MkdirFor(a file in a linked logs/) = nil, want an error")
	}
	os.Remove(d.Logs())

	os.WriteFile(d.Prompts(), nil, 0o600)
	if err := d.Check(); err == nil || !strings.Contains(err.Error(), "is not a directory (a file)") {
		t.Errorf("Check(prompts a file) = %v", err)
	}
	os.Remove(d.Prompts())

	if os.Geteuid() == 0 {
		os.Mkdir(d.Supervisors(), 0o700)
		if err := os.Chown(d.Supervisors(), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		err := d.Check()
		if err == nil || !strings.Contains(err.Error(), "belongs to uid 65534, not to you (uid 0)") {
			t.Errorf("Check(supervisors/ of another user) = %v", err)
		}
		if err := MkdirFor(d.Supervisor("bd-1")); err == nil {
			t.Errorf("MkdirFor(a file in another user's directory) = nil, want an error")
		}
	}
}

func TestOpenAndReadFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("0123456789"), 0o600)
	if b, err := ReadFile(file, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("ReadFile(file) = %q, %v", b, err)
	}
	if _, err := ReadFile(file, 9); err == nil || !strings.Contains(err.Error(), "over the 9-byte limit") {
		t.Errorf("ReadFile(file over the limit) = %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want fs.ErrNotExist", err)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(file, link)
	sock := filepath.Join(dir, "sock")
	l, err := ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct{ path, says string }{
		{fifo, "a named pipe"}, {link, "a symbolic link"}, {dir, "a directory"}, {sock, "a socket"}, {"/dev/null", "a device"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadFile(tc.path, 1<<20)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("ReadFile(%s) = %v; want ErrNotRegular saying %q", tc.path, err, tc.says)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) blocks", tc.path)
		}
	}
}

func TestListenUnixOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("ListenUnix made %v, %v; want 0600", fi.Mode(), err)
	}
	// A link at the path is not replaced, and its target keeps its mode.
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, nil, 0o644)
	linked := filepath.Join(t.TempDir(), "l.sock")
	os.Symlink(target, linked)
	if l, err := ListenUnix(linked); err == nil {
		l.Close()
		t.Errorf("ListenUnix(a link) = nil error")
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
		t.Errorf("the link's target became %v", fi.Mode())
	}
}

func TestAttemptFile(t *testing.T) {
	d := Dir{Root: "s"}
	tests := []struct {
		name string
		kind string
		n    int
		ok   bool
	}{
		{filepath.Base(d.AttemptRun("bd", 3)), "run", 3, true},
		{filepath.Base(d.AttemptResult("bd", 12)), "result", 12, true},
		{filepath.Base(d.AttemptOutput("bd", 1)), "output", 1, true},
		{"run-0.json", "", 0, false},
		{"run-01.json", "", 0, false},
		{"run-.json", "", 0, false},
		{"run-1x.json", "", 0, false},
		{"run-1.json.lock", "", 0, false},
		{".run-1.json.tmp-123", "", 0, false},
		{"output-2.json", "", 0, false},
		{"run-9999999999.json", "", 0, false},
	}
	for _, tt := range tests {
		kind, n, ok := AttemptFile(tt.name)
		if kind != tt.kind || n != tt.n || ok != tt.ok {
			t.Errorf("AttemptFile(%q) = %q, %d, %v; want %q, %d, %v", tt.name, kind, n, ok, tt.kind, tt.n, tt.ok)
		}
	}
}

// $SWARM_DIR is held to dispatch's rules (issue 17): its subdirectories planted as links were
// followed, and a $SWARM_DIR of another user's was used as it is.
func TestSwarmCheck(t *testing.T) {
	root := t.TempDir()
	s := Swarm{Root: filepath.Join(root, "swarm")}
	if err := s.Check(); err != nil {
		t.Errorf("Check(missing) = %v, want nil", err)
	}
	for _, dir := range []string{s.Logs(), s.Heartbeats(), s.Ralph(), Dir{Root: s.Supervise()}.Locks()} {
		if err := Mkdir(dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check(fresh) = %v", err)
	}
	elsewhere := t.TempDir()
	for _, sub := range []string{s.Logs(), s.Heartbeats(), s.Ralph(), s.Supervise(), Dir{Root: s.Supervise()}.Locks(),
		Dir{Root: s.Supervise()}.Supervisors()} {
		moved := sub + ".real"
		hadOne := os.Rename(sub, moved) == nil
		if err := os.Symlink(elsewhere, sub); err != nil {
			t.Fatal(err)
		}
		err := s.Check()
		if err == nil || !strings.Contains(err.Error(), sub+" is a symbolic link") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Check(%s a link) = %v; want one line naming it", sub, err)
		}
		os.Remove(sub)
		if hadOne {
			os.Rename(moved, sub)
		}
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(s.Root, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534, not to you (uid 0)") {
			t.Errorf("Check($SWARM_DIR of another user) = %v", err)
		}
	}
}

// CreateFresh never writes through, or empties, what a planted link points at.
func TestCreateFresh(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	path := filepath.Join(dir, "logs", "w.stderr.log")
	os.Mkdir(filepath.Dir(path), 0o700)
	os.Symlink(victim, path)
	f, err := CreateFresh(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("victim = %q after CreateFresh through a link", b)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("CreateFresh left %v, %v; want an empty regular file, 0600", fi, err)
	}
}
