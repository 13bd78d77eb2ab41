package postmortem

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/testenv/sweep"
)

// TestMain makes the test binary a stand-in supervisor when POSTMORTEM_SUPERVISOR is set: a
// Go program that says it runs (the file POSTMORTEM_SUPERVISOR names: from then on its runtime
// answers SIGQUIT) and waits, for the post-mortem to ask for its goroutines.
func TestMain(m *testing.M) {
	if ready := os.Getenv("POSTMORTEM_SUPERVISOR"); ready != "" {
		os.WriteFile(ready, []byte("running\n"), 0o644)
		waitForever()
	}
	os.Exit(sweep.Guard(m).Run())
}

func waitForever() { time.Sleep(time.Hour) }

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// deadPID is the pid of a process that has ended and been reaped.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestReportShowsLogsStatesAndProcesses(t *testing.T) {
	root := t.TempDir()
	dead := deadPID(t)
	log := strings.Repeat("a line of the agent's\r\n", 500) + "agent: the last words\x1b[0m\r\n"
	write(t, filepath.Join(root, "state/logs/bd-1.log"), log)
	write(t, filepath.Join(root, "state/supervisors/bd-1.json"), fmt.Sprintf(`{"name": "bd-1", "pid": %d, "agent_pid": %d}`, os.Getpid(), dead))
	write(t, filepath.Join(root, "state/results/bd-1.json"), `{"bead":"bd-1","status":"running"}`)
	write(t, filepath.Join(root, "state/runs/bd-1.json"), `{"prompt_full":"not shown"}`)
	write(t, filepath.Join(root, "repo/.git/logs/HEAD.log"), "not shown")
	var b bytes.Buffer
	Report(&b, root)
	got := b.String()
	for _, want := range []string{
		"=== state/supervisors/bd-1.json", `"status":"running"`,
		fmt.Sprintf("=== state/logs/bd-1.log (%d bytes", len(log)), "its last 61", "agent: the last words\\x1b[0m\n",
		fmt.Sprintf("=== process %d (pid of bd-1.json): state ", os.Getpid()),
		fmt.Sprintf("=== process %d (agent_pid of bd-1.json): gone", dead),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"not shown", "\r"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("the report shows %q:\n%s", unwanted, got)
		}
	}
}

func TestReportShowsPanes(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	dir, err := os.MkdirTemp("", "pm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	defer exec.Command("tmux", "-S", sock, "kill-server").Run()
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-s", "sup", "echo the console; exec sleep 60").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var b bytes.Buffer
		Report(&b, t.TempDir(), sock)
		if got = b.String(); strings.Contains(got, "the console") {
			break
		}
	}
	if !strings.Contains(got, "pane %0 sup:") || !strings.Contains(got, "\nthe console") {
		t.Errorf("the report does not show the pane:\n%s", got)
	}
}

func TestReportAsksASupervisorInAPaneForItsGoroutines(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	dir, err := os.MkdirTemp("", "pm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	defer exec.Command("tmux", "-S", sock, "kill-server").Run()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-s", "sup",
		"env", "POSTMORTEM_SUPERVISOR="+filepath.Join(dir, "ready"), self, "-test.run=^$", superviseVerb).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			break
		}
	}
	out, _ := exec.Command("tmux", "-S", sock, "display-message", "-p", "-t", "sup", "#{pane_pid}").Output()
	pid := strings.TrimSpace(string(out))
	var b bytes.Buffer
	Report(&b, t.TempDir(), sock)
	got := b.String()
	if !strings.Contains(got, "=== goroutines of the supervisor "+pid) || !strings.Contains(got, "SIGQUIT") || !strings.Contains(got, "waitForever") {
		t.Errorf("the report does not show the supervisor's goroutines:\n%s", got)
	}
}

// fakeT is a test that has failed or not, and what it logged.
type fakeT struct {
	failed bool
	log    strings.Builder
}

func (f *fakeT) Failed() bool    { return f.failed }
func (f *fakeT) Log(args ...any) { fmt.Fprint(&f.log, args...) }

func TestOnFailureOnlyOnFailure(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "logs/a.log"), "hello\n")
	passed := &fakeT{}
	OnFailure(passed, root)
	if passed.log.Len() > 0 {
		t.Errorf("a passing test got a post-mortem: %s", passed.log.String())
	}
	failed := &fakeT{failed: true}
	OnFailure(failed, root)
	if got := failed.log.String(); !strings.Contains(got, "=== logs/a.log") || !strings.Contains(got, "hello") {
		t.Errorf("a failed test's post-mortem: %s", got)
	}
}
