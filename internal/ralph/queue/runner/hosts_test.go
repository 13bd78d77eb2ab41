package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/ralph/queue/plan"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/swarmrun"
	"github.com/agentfleet/fleet/internal/testenv/sshlab"
)

const labVersion = "sshlab-queue"

// gitIn runs git in dir and returns its output, trimmed.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// labHosts makes w's repository a git repository and a lab of n sshd hosts of one agent each,
// each with a clone of it, our dispatch (built by the test, at the same path there: the hosts
// share the file system) and the stand-in agent; it returns swarm run's executor per host.
func labHosts(t *testing.T, w *world, n int) (*sshlab.Lab, []*swarmrun.Remote) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts sshd hosts in network namespaces")
	}
	lab := sshlab.New(t, n)
	gitIn(t, w.repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(w.repo, "README"), []byte("base\n"), 0o600)
	gitIn(t, w.repo, "add", "README")
	gitIn(t, w.repo, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "base")
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-ldflags", "-X github.com/agentfleet/fleet/internal/cli.version="+labVersion,
		"-o", filepath.Join(bin, "dispatch"), "../../../../cmd/dispatch").CombinedOutput(); err != nil {
		t.Fatalf("go build dispatch: %v: %s", err, out)
	}
	dir := t.TempDir()
	sh, _ := filepath.Abs("testdata/agent.sh")
	config := filepath.Join(dir, "agents.json")
	os.WriteFile(config, fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}}`, sh), 0o644)
	d, err := remote.NewDialer(remote.Options{ConnectTimeout: 2 * time.Second, AliveInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	var execs []*swarmrun.Remote
	for _, h := range lab.Hosts {
		clone := filepath.Join(dir, h.Name, "repo")
		if out, err := exec.Command("git", "clone", "-q", w.repo, clone).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v: %s", err, out)
		}
		host := &remote.Host{Name: h.Name, SSH: h.Dest, Identity: lab.Key, KnownHosts: lab.KnownHosts, MaxAgents: 1,
			Repo: clone, AgentsConfig: config, Bin: bin, StateDir: filepath.Join(dir, h.Name, "state"),
			Env: map[string]string{"DISPATCH_KILL_GRACE": "1", "DISPATCH_MIN_FREE_MB": "1"}}
		c, err := d.Dial(context.Background(), host)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CheckVersion(context.Background(), "dispatch", "dispatch version "+labVersion); err != nil {
			t.Fatal(err)
		}
		execs = append(execs, &swarmrun.Remote{Conn: c, Repo: w.repo, StateDir: w.stateDir, Every: 200 * time.Millisecond,
			OfflineAfter: 3 * time.Second, KillGrace: time.Second})
	}
	return lab, execs
}

// TestRunOnHostsOneCutOff: ralph queue run --hosts. Three tasks on two sshd hosts of one agent
// each; h1 is cut off while its agent works (and hangs: only its deadline there stops it).
// Every task is done exactly once: the one taken back from h1, pending again without a retry
// counted, runs on h2 only once its deadline on h1 has passed (no two agents of it ever alive
// at once); h1's agent ends; the records came back here, each task's branch agent/<bead> holds
// its work, and the queue's files keep to their schemas.
func TestRunOnHostsOneCutOff(t *testing.T) {
	tmp := t.TempDir()
	alog := filepath.Join(tmp, "agents.log")
	w := newWorld(t,
		fmt.Sprintf("t1: alone:%s hold:%s touch:t1.txt", alog, tmp),
		fmt.Sprintf("t2: alone:%s hold:%s touch:t2.txt", alog, tmp),
		fmt.Sprintf("t3: alone:%s touch:t3.txt (after t1, t2)", alog))
	lab, execs := labHosts(t, w, 2)
	log := newLogWatch()
	cfg := w.config(2, 2, log)
	cfg.Hosts, cfg.Worktree, cfg.Timeout = execs, true, 6*time.Second
	type ran struct {
		res *Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := w.runE(context.Background(), cfg)
		done <- ran{res, err}
	}()
	// Both agents at work, one task on each host (whichever claimed which): h1's is cut off.
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(readFile(alog), " start ") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the agents never started:\n%s\n%s", readFile(alog), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	onH1, agentH1 := "t1", "agent-1"
	if strings.Contains(readFile(alog), "t2 start h1-1") {
		onH1 = "t2"
	}
	if strings.Contains(log.String(), "agent-2: started "+onH1) {
		agentH1 = "agent-2"
	}
	lab.Cut(t, 0)
	os.WriteFile(filepath.Join(tmp, "go-h2"), nil, 0o600)
	var r ran
	select {
	case r = <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not end:\n%s", log)
	}
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, log)
	}
	if r.res.Counts[store.Done] != 3 {
		t.Fatalf("counts %v, want 3 done\n%s\n%s", r.res.Counts, log, readFile(alog))
	}
	runs := readFile(alog)
	if strings.Contains(runs, "overlap") {
		t.Errorf("a task's agent started while another of it was alive:\n%s", runs)
	}
	for _, id := range []string{"t1", "t2", "t3"} {
		if n := strings.Count(runs, id+" end "); n != 1 || !strings.Contains(runs, id+" end h2-1 0") {
			t.Errorf("task %s ended %d times, want once, on h2-1:\n%s\n%s", id, n, runs, log)
		}
		task := w.task(id)
		if task.Status != store.Done || task.Retries != 0 {
			t.Errorf("task %s: %s with %d retries, want done with none counted", id, task.Status, task.Retries)
		}
		bead := plan.Bead("p", id)
		if res, err := record.ReadResult(record.Store{Dir: w.stateDir}.ResultPath(bead)); err != nil || res.Status != record.StatusDone {
			t.Errorf("task %s's result record here: %+v, %v", id, res, err)
		}
		if got := gitIn(t, w.repo, "ls-tree", "--name-only", "agent/"+bead); !strings.Contains(got, id+".txt") {
			t.Errorf("branch agent/%s holds %q, want its %s.txt", bead, got, id)
		}
	}
	// The task on h1 went back to pending, held until its deadline there, and ran again after
	// it (the agents' overlap check above holds that).
	if !regexp.MustCompile(agentH1 + `: ` + onH1 + ` \(attempt 1\): host h1 went offline during attempt 1 .*; pending, held until \S+`).MatchString(log.String()) {
		t.Errorf("the log does not say %s was taken back from h1 and held:\n%s", onH1, log)
	}
	if !strings.Contains(log.String(), agentH1+": host h1 is offline: the agent ends") {
		t.Errorf("%s did not end with its host:\n%s", agentH1, log)
	}
	w.valid()
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
