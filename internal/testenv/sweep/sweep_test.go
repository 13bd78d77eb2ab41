package sweep

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Guard(m).Run()) }

// detached starts a shell that runs `sleep`, in a session of its own (as a tmux server or a
// supervisor is: no process group nor parent reaches it), with env as its environment's
// FLEET_TEST_MARK; it returns the shell's pid once the shell runs, and kills it when the test
// ends.
func detached(t *testing.T, mark string) int {
	t.Helper()
	c := exec.Command("sh", "-c", "echo up; exec sleep 1000")
	c.Env = append(os.Environ(), Var+"="+mark)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n') // before Wait, which closes the pipe
	waited := make(chan struct{})
	go func() { c.Wait(); close(waited) }() // reaped once killed: gone, not a zombie
	t.Cleanup(func() { c.Process.Kill(); <-waited })
	if line != "up\n" {
		t.Fatalf("the shell's first line: %q, %v", line, err)
	}
	return c.Process.Pid
}

// gone reports, within 10 s, whether pid has ended (or is a zombie: killed, not yet reaped).
func gone(pid int) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return true
		}
	}
	return false
}

func TestKillEndsTheMarkedProcessesAndThoseBelowOnly(t *testing.T) {
	run := NewMark("")
	mine, below := detached(t, run), detached(t, NewMark(run))
	other := detached(t, NewMark(""))
	prefix := detached(t, run+"x") // a mark that begins as ours is another mark

	killed := Kill(run)
	got := map[int]bool{}
	for _, p := range killed {
		got[p.PID] = true
	}
	if len(killed) != 2 || !got[mine] || !got[below] {
		t.Errorf("Kill = %v, want %d and %d", killed, mine, below)
	}
	if !gone(mine) || !gone(below) {
		t.Errorf("after Kill, %d or %d still runs", mine, below)
	}
	for _, pid := range []int{other, prefix} {
		if syscall.Kill(pid, 0) != nil {
			t.Errorf("%d, of another mark, was killed", pid)
		}
	}
	if killed[0].Command != "sleep 1000" {
		t.Errorf("Kill's command: %q", killed[0].Command)
	}
}

// TestHangingTest is the hanging test TestWatchdog runs, in a copy of this binary: it starts a
// detached process and waits for ever. Otherwise it does nothing (a skip would be listed among
// make test's skips).
func TestHangingTest(t *testing.T) {
	pidFile := os.Getenv("SWEEP_TEST_HANG")
	if pidFile == "" {
		return
	}
	c := exec.Command("sh", "-c", "exec sleep 1000")
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(pidFile, []byte(strconv.Itoa(c.Process.Pid)), 0o600)
	t.Cleanup(func() { t.Log("a cleanup that the timeout skips") })
	AtTimeout(func() { os.WriteFile(pidFile+".at-timeout", nil, 0o600) })
	AtTimeout(func() { select {} })() // forgotten: not run
	select {}                         // what a read with no deadline does
}

// A test that hangs is ended before go test's -timeout by the binary's watchdog, which prints
// the goroutines (the hanging test's among them) and kills what the test started, which
// neither go test's timeout (a panic: no cleanup) nor the test did.
func TestWatchdog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a test that hangs for 5 s")
	}
	pidFile := t.TempDir() + "/pid"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHangingTest$", "-test.timeout=5s")
	c.Env = append(os.Environ(), "SWEEP_TEST_HANG="+pidFile)
	out, err := c.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("the hanging test's binary: %v, want exit status 2; its output:\n%s", err, out)
	}
	for _, want := range []string{
		"panic: test timed out: still running 500ms before go test's -timeout 5s; the goroutines:\n",
		"sweep.TestHangingTest(",
		"sweep: killed 1 processes the tests started: [",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(string(b))
	if err != nil || pid <= 0 {
		t.Fatalf("the hanging test's process: %q, %v", b, err)
	}
	if _, err := os.Stat(pidFile + ".at-timeout"); err != nil {
		t.Errorf("the cleanup registered with AtTimeout did not run: %v", err)
	}
	if !gone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the hanging test's process %d still runs", pid)
	}
	if !strings.Contains(string(out), fmt.Sprintf("[%d sleep 1000]", pid)) {
		t.Errorf("the sweep does not name the process it killed:\n%s", out)
	}
}
