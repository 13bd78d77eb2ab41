package supervise

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTakeHandoffRefusesAnotherUsersSpec: a spec is a command line the supervisor will run, so
// one offered by another user (here nobody, listening where the starter's socket should be) is
// refused, never read.
func TestTakeHandoffRefusesAnotherUsersSpec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("acting as user nobody needs root")
	}
	dir, err := os.MkdirTemp("", "handoff")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	// This test binary, where nobody can run it, as the other user's starter.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helper")
	if err := copyFile(self, bin); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "h.sock")
	server := exec.Command(bin, "-test.run=^TestHandoffHelperStarter$")
	server.Env = append(os.Environ(), "HANDOFF_HELPER_SOCKET="+path)
	server.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ := server.StdoutPipe()
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer server.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("the helper did not start: %q, %v", line, err)
	}
	done := make(chan error, 1)
	var spec []byte
	go func() {
		var err error
		spec, err = TakeHandoff(path)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not this user") || spec != nil {
			t.Errorf("TakeHandoff(nobody's socket) = %q, %v; want a refusal", spec, err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("TakeHandoff hangs")
	}
}

// TestHandoffHelperStarter is the other user's starter of TestTakeHandoffRefusesAnotherUsersSpec,
// run in a process of its own; it does nothing in a normal run.
func TestHandoffHelperStarter(t *testing.T) {
	path := os.Getenv("HANDOFF_HELPER_SOCKET")
	if path == "" {
		t.Skip("a helper process of TestTakeHandoffRefusesAnotherUsersSpec")
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("ready\n")
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte(`{"attempt":{"argv":["sh","-c","echo owned"]}}`))
	c.Close()
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
