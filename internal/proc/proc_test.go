package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A real process of the test's own making: its pid, its command line, its end.
func TestHoldsAndStartTime(t *testing.T) {
	// sh, not sleep: GNU sleep would take marker-word for a duration and exit at once (its
	// command line then empty, a zombie's). sh stays, the sleep not its last command.
	cmd := exec.Command("sh", "-c", "sleep 30; :", "marker-word")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its sleep is killed with it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL); cmd.Wait() })

	if !Alive(pid) || Alive(0) || Alive(-1) {
		t.Fatalf("Alive(%d)=%v Alive(0)=%v Alive(-1)=%v", pid, Alive(pid), Alive(0), Alive(-1))
	}
	// Start returns once the child is forked, not once it has exec'd sh: until then its
	// command line is the test's, or empty. Wait for the exec.
	var args []string
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if args, err = Args(pid); err == nil && len(args) == 4 {
			break
		}
	}
	if err != nil || len(args) != 4 || args[1] != "-c" || args[3] != "marker-word" {
		t.Fatalf("Args = %q, %v", args, err)
	}
	if !Holds(pid, []string{"run", "marker-word"}, []string{"-c"}) {
		t.Error("Holds: a word from each list is there, got false")
	}
	if Holds(pid, []string{"marker-word"}, []string{"other"}) {
		t.Error("Holds: a list with no word there, got true")
	}
	if Holds(pid, []string{"marker"}) {
		t.Error("Holds matched part of an argument")
	}
	start, ok := StartTime(pid)
	self, ok2 := StartTime(os.Getpid())
	if !ok || !ok2 || start < self {
		t.Errorf("StartTime = %d, %v; the test's own %d, %v", start, ok, self, ok2)
	}

	syscall.Kill(-pid, syscall.SIGKILL)
	cmd.Wait()
	if Alive(pid) || Holds(pid, []string{"marker-word"}) {
		t.Error("a reaped process still alive")
	}
	if _, ok := StartTime(pid); ok {
		t.Error("StartTime of a reaped process")
	}
}

func TestReadStat(t *testing.T) {
	st, ok := ReadStat(os.Getpid())
	if !ok || st.PPID != os.Getppid() || st.Start == 0 || (st.State != 'R' && st.State != 'S') {
		t.Errorf("ReadStat(self) = %+v, %v; want ppid %d, a start time, running", st, ok, os.Getppid())
	}
	if start, _ := StartTime(os.Getpid()); start != st.Start {
		t.Errorf("StartTime(self) = %d, ReadStat's %d", start, st.Start)
	}
	if _, ok := ReadStat(1 << 30); ok {
		t.Error("ReadStat(no such pid) = ok")
	}
}
