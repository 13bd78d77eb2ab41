package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/runevents"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/labconn"
	"github.com/agentfleet/fleet/internal/testenv/sshlab"
)

// everyEventManifest is a chain, so that its events come in one order: a is held on h1 (its
// agent waits for a file h1 never gets) while h1 is cut off, and runs again on h2 after its
// deadline there; k fails once, then completes; f fails twice (for good); g, after f, is
// blocked. The stand-in agent is swarmrun's (internal/swarmrun/testdata/agent.sh: alone, hold,
// write, flaky, fail).
const everyEventManifest = `name: every
defaults: {agent: fake, retries: 1, timeout: 4}
tasks:
  - {id: a, prompt: "alone:%[1]s hold:%[2]s write:a.txt", branch: a}
  - {id: k, prompt: "write:k.txt flaky:2", branch: k, depends_on: [a]}
  - {id: f, prompt: "fail", branch: f, depends_on: [k]}
  - {id: g, prompt: "write:g.txt", branch: g, depends_on: [f]}
`

// everyEventWant is every event of the run and of the merge after it, as the hook and the
// events file have them: event, task, attempt, agent, host, status, and the counts of
// run-start and run-end.
var everyEventWant = []string{
	`run-start  0   running tasks=4 slots=2 counts={"completed":0,"failed":0,"blocked":0,"skipped":0,"pending":4,"retries":0}`,
	"task-start a 1 h1-1 h1 running",
	"host-offline  0  h1 ",
	"task-requeued a 1 h1-1 h1 queued",
	"task-start a 1 h2-1 h2 running",
	"task-end a 1 h2-1 h2 completed",
	"task-start k 1 h2-1 h2 running",
	"task-retry k 1 h2-1 h2 queued",
	"task-start k 2 h2-1 h2 running",
	"task-end k 2 h2-1 h2 completed",
	"task-start f 1 h2-1 h2 running",
	"task-retry f 1 h2-1 h2 queued",
	"task-start f 2 h2-1 h2 running",
	"task-failed f 2 h2-1 h2 failed",
	"task-blocked g 0   blocked",
	`run-end  0   failed counts={"completed":2,"failed":1,"blocked":1,"skipped":0,"pending":0,"retries":2} wall`,
	"merge a 0   merged branch=a",
	"merge k 0   merged branch=k",
}

// TestRunEveryEvent: every event of a real `swarm run` on two sshd hosts of the test lab
// (internal/testenv/sshlab), with a task retried, one failed for good, one blocked and the
// first host cut off while its agent works, then of `swarm run merge` landing the completed
// branches: what the --on-event hook of each was told, and what the events file keeps, each
// compared with the list above (the run's in seq order, the merges after it).
func TestRunEveryEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sshd hosts in network namespaces")
	}
	lab := sshlab.New(t, 2)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	const version = "sshlab-swarm-events"
	if out, err := exec.Command("go", "build", "-ldflags", "-X github.com/agentfleet/fleet/internal/cli.version="+version,
		"-o", bin+"/", "../swarm", "../dispatch").CombinedOutput(); err != nil {
		t.Fatalf("go build swarm dispatch: %v: %s", err, out)
	}
	repo := filepath.Join(tmp, "repo")
	if err := testenv.GitRepo(repo); err != nil {
		t.Fatal(err)
	}
	agentSh, _ := filepath.Abs("../../internal/swarmrun/testdata/agent.sh")
	config := filepath.Join(tmp, "agents.json")
	os.WriteFile(config, fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}}`, agentSh), 0o644)
	hostsFile := labconn.HostsFile(t, lab, tmp, repo, config, bin)
	alog := filepath.Join(tmp, "agents.log")
	os.WriteFile(filepath.Join(tmp, "go-h2"), nil, 0o600) // h2's agents are not held
	manifest := filepath.Join(tmp, "work.yaml")
	os.WriteFile(manifest, fmt.Appendf(nil, everyEventManifest, alog, tmp), 0o600)
	hookLog := filepath.Join(tmp, "hook.log")
	hook := fmt.Sprintf("sh -c 'cat >> %s'", hookLog)
	swarm := func(args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, "swarm"), args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CONFIG_FILE="+config, "HOME="+tmp, "DISPATCH_HOST_OFFLINE=3")
		return cmd
	}

	run := swarm("run", manifest, "--hosts", hostsFile, "--forge", "none", "--state-dir", filepath.Join(tmp, "state"), "--on-event", hook)
	var out strings.Builder
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(readFileOr(alog), "a start h1-"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			run.Process.Kill()
			<-done
			t.Fatalf("a never started on h1:\n%s", out.String())
		}
	}
	lab.Cut(t, 0)
	select {
	case err := <-done:
		if code := exitCodeOf(err); code != 1 {
			t.Fatalf("swarm run exited %d (%v), want 1 (a task failed):\n%s", code, err, out.String())
		}
	case <-time.After(120 * time.Second):
		run.Process.Kill()
		t.Fatalf("swarm run did not end:\n%s", out.String())
	}

	// main is this checkout's branch: the merge lands on it with the checkout off it.
	if _, err := gitx.Run(context.Background(), repo, "", "switch", "-q", "--detach", "main"); err != nil {
		t.Fatal(err)
	}
	if b, err := swarm("run", "merge", "--on-event", hook).CombinedOutput(); err != nil {
		t.Fatalf("swarm run merge: %v\n%s", err, b)
	}

	// The hook: kind run, the attempt as its iteration.
	var told []string
	for _, line := range strings.Split(strings.TrimSpace(readFileOr(hookLog)), "\n") {
		var e struct {
			Event, Task, Agent, Host, Status, Branch string
			Iteration                                int
			Tasks, Slots                             int
			Counts                                   json.RawMessage
			WallSeconds                              float64 `json:"wall_seconds"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("the hook read %q: %v", line, err)
		}
		told = append(told, eventWords(e.Event, e.Task, e.Iteration, e.Agent, e.Host, e.Status, e.Branch, e.Tasks, e.Slots, e.Counts, e.WallSeconds))
	}
	checkEventList(t, "what the --on-event hooks read", told, out.String())

	// The events file: the run's numbered from 1, the merges (outside the run) 0.
	ids, _ := filepath.Glob(filepath.Join(repo, ".swarm", "history", "*.events.jsonl"))
	if len(ids) != 1 {
		t.Fatalf("events files: %v", ids)
	}
	id := strings.TrimSuffix(filepath.Base(ids[0]), ".events.jsonl")
	r, err := runevents.OpenReader(repo, id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	evs, err := r.Read()
	if err != nil || r.Bad != 0 {
		t.Fatalf("reading the events file: %v, %d bad lines", err, r.Bad)
	}
	var kept []string
	for i, e := range evs {
		seq := i + 1
		if e.Event == runevents.Merge {
			seq = 0
		}
		if e.Seq != seq || e.Execution != id || e.Time == "" {
			t.Errorf("the events file's event %d: %+v", i, e)
		}
		counts, _ := json.Marshal(e.Counts)
		if e.Counts == nil {
			counts = nil
		}
		kept = append(kept, eventWords(e.Event, e.Task, e.Attempt, e.Agent, e.Host, e.Status, e.Branch, e.Tasks, e.Slots, counts, e.WallSeconds))
	}
	checkEventList(t, "the events file", kept, out.String())
}

// eventWords is what TestRunEveryEvent compares of an event (its times masked: the wall time
// only said to be there).
func eventWords(event, task string, attempt int, agent, host, status, branch string, tasks, slots int, counts []byte, wall float64) string {
	s := fmt.Sprintf("%s %s %d %s %s %s", event, task, attempt, agent, host, status)
	if branch != "" {
		s += " branch=" + branch
	}
	if tasks > 0 || slots > 0 {
		s += fmt.Sprintf(" tasks=%d slots=%d", tasks, slots)
	}
	if len(counts) > 0 {
		s += " counts=" + string(counts)
	}
	if wall > 0 {
		s += " wall"
	}
	return s
}

func checkEventList(t *testing.T, what string, got []string, runOut string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(everyEventWant, "\n") {
		t.Errorf("%s has the events:\n%s\nwant:\n%s\nswarm run's output:\n%s", what, strings.Join(got, "\n"), strings.Join(everyEventWant, "\n"), runOut)
	}
}

// readFileOr is the file's text, "" when it cannot be read (not there yet).
func readFileOr(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// exitCodeOf is a finished command's exit code (0: none failed; -1: not an exit).
func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
