package swarm

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/supervise"
)

// TestWaitGoneWaitsForTheWindow: `swarm wait` (WaitGone) returns once the worker is wholly gone,
// its window included, as the Python swarm's wait (which waited for the window) did. The
// supervisor is the pane's process, and tmux closes the window only once it has seen it exit:
// here the tmux server is stopped (SIGSTOP) while the supervisor exits, so the window is
// certainly still there when the supervisor is gone. WaitGone must not return before the server
// runs again and the window is gone; it returned at once, with the window there, when it only
// waited for the supervisor (attach.txtar saw the window after `swarm wait` under load).
func TestWaitGoneWaitsForTheWindow(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	sock := "t"
	w, err := l.sw.Spawn(ctx, Spec{Name: "t1", Cmd: []string{l.agent}, Tmux: &TmuxSpec{Session: "s", Socket: &sock}})
	if err != nil {
		l.fatalf("t1", "Spawn(t1) = %v", err)
	}
	l.waitScreen(w, "agent ready")
	entry, _ := l.sw.layout.ReadEntry("t1")
	if entry == nil || entry.PID <= 0 || entry.AgentPID <= 0 {
		l.fatalf("t1", "no supervisor or agent pid in the entry: %+v", entry)
	}
	tc, err := l.sw.Tmux(w)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("tmux", "-S", tc.Socket, "display-message", "-p", "#{pid}").Output()
	server, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || server <= 0 {
		t.Fatalf("the tmux server's pid: %q, %v", out, err)
	}
	if err := syscall.Kill(server, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	continued := false
	resume := func() {
		if !continued {
			continued = true
			syscall.Kill(server, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)

	// The agent ends; its supervisor records that and exits, a zombie tmux cannot reap yet.
	syscall.Kill(entry.AgentPID, syscall.SIGKILL)
	supervise.WaitExit(ctx, entry, 30*time.Second)
	if supervise.SupervisorAlive(entry.PID, "t1") {
		l.fatalf("t1", "the supervisor %d did not exit within 30s of its agent's end", entry.PID)
	}

	done := make(chan struct{})
	go func() {
		l.sw.WaitGone(ctx, w, 30*time.Second)
		close(done)
	}()
	// WaitGone either returns (without a word from the stopped server: wrong), or asks tmux,
	// which cannot answer until the server runs again: its tmux client is the signal to let
	// the server go on.
	for asked := false; !asked; {
		select {
		case <-done:
			resume()
			t.Fatal("WaitGone returned while the tmux server was stopped: the worker's window was still there")
		default:
		}
		asked = tmuxClientOf(os.Getpid())
		time.Sleep(5 * time.Millisecond)
	}
	resume()
	<-done
	windows, err := tc.ListWindows(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, win := range windows {
		if win.Name == "t1" {
			l.fatalf("t1", "window s:t1 is still there after WaitGone")
		}
	}
}

// tmuxClientOf reports whether a tmux process whose parent is pid runs (a client this test
// process started; tmux names itself "tmux: client").
func tmuxClientOf(pid int) bool {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open || !strings.HasPrefix(s[open+1:close], "tmux") {
			continue
		}
		if f := strings.Fields(s[close+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}
