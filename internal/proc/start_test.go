package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSelf(t *testing.T) {
	defer func(a string) { os.Args[0] = a }(os.Args[0])
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(dir, "fleet-tool")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	wd, _ := os.Getwd()
	for _, c := range []struct{ arg0, want string }{
		// A bare name is found on PATH, the link kept: the name it was started by.
		{"fleet-tool", filepath.Join(dir, "fleet-tool")},
		// A path is made absolute, never resolved.
		{filepath.Join(dir, "fleet-tool"), filepath.Join(dir, "fleet-tool")},
		{"./x/../fleet", filepath.Join(wd, "fleet")},
		// Not on PATH: the executable.
		{"no-such-program-here", exe},
	} {
		os.Args[0] = c.arg0
		if got, err := Self(); err != nil || got != c.want {
			t.Errorf("Self() with os.Args[0] %q = %q, %v; want %q", c.arg0, got, err, c.want)
		}
	}
}

// A detached child: its own session, its directory and environment, stdin /dev/null (cat
// ends at once), output to the given file, reaped.
func TestStartDetached(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "out.log")
	if err := os.WriteFile(log, []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := StartDetached([]string{"sh", "-c", `echo "sid=$(ps -o sid= -p $$ | tr -d " ") pid=$$ pwd=$(pwd) v=$V"; cat; echo err >&2`},
		Detached{Dir: dir, Env: []string{"V=given", "PATH=" + os.Getenv("PATH")}, Output: f})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		c.Kill()
		t.Fatal("the child did not end (was its stdin the test's?)")
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := "sid=" + strconv.Itoa(c.Pid) + " pid=" + strconv.Itoa(c.Pid) + " pwd=" + dir + " v=given"
	if len(lines) != 3 || lines[0] != "before" || strings.Join(strings.Fields(lines[1]), " ") != want || lines[2] != "err" {
		t.Errorf("log = %q; want before, %q, err", lines, want)
	}
	if Alive(c.Pid) {
		t.Error("the child was not reaped")
	}
}

func TestStartDetachedKill(t *testing.T) {
	c, err := StartDetached([]string{"sleep", "30"}, Detached{})
	if err != nil {
		t.Fatal(err)
	}
	c.Kill()
	if Alive(c.Pid) {
		t.Error("Kill returned before the child was reaped")
	}
	c.Kill() // a second time: nothing left to do, and no hang
	if _, err := StartDetached([]string{"/nonexistent/program"}, Detached{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("StartDetached(no such program) = %v, want ErrNotExist", err)
	}
	if _, err := StartDetached(nil, Detached{}); err == nil {
		t.Error("StartDetached(no argv) = nil error")
	}
}
