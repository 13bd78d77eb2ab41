package swarmrun

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"

	gitx "github.com/agentfleet/fleet/internal/git"
)

// TestAbortSignalsOnlyARunner: a state's runner_pid is read back from .swarm/state.json, a file
// an agent working in the repository can write; swarm run --abort sends SIGTERM to it only when
// that process is a run (its command line holds "run"), so a pid planted there, here a sleep of
// the user's, is not killed, and the execution is still aborted.
func TestAbortSignalsOnlyARunner(t *testing.T) {
	repo := t.TempDir()
	if out, err := gitx.Run(context.Background(), repo, "", "init", "-q"); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	p := Paths{Root: repo}
	if err := os.MkdirAll(p.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	victim := exec.Command("sleep", "600")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	st := encState(2)
	st.Repo, st.RunnerPID = repo, victim.Process.Pid
	if err := st.writeFile(p.State()); err != nil {
		t.Fatal(err)
	}

	got, err := Abort(context.Background(), p, repo)
	if err != nil {
		t.Fatal(err)
	}
	if got.Summary == nil || got.Summary.Skipped != 2 {
		t.Errorf("the execution was not aborted: %+v", got.Summary)
	}
	// Whatever signal ends the sleep is the first it got: SIGTERM had Abort sent it.
	victim.Process.Signal(syscall.SIGKILL)
	victim.Wait()
	if ws, _ := victim.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
		t.Errorf("the process named by runner_pid, no run, ended by %v: --abort signalled it", ws.Signal())
	}
}
