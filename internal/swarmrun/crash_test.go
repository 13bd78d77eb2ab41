package swarmrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/executor"
	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/manifest"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

// killedRunVerb makes the test binary a run that SIGKILLs itself at a named step:
// "BINARY __killed_run REPO STATE_DIR MANIFEST STEP N" runs the manifest on two local slots and
// kills itself (SIGKILL, as the kernel would end it: no deferred function runs, its locks are
// released by the kernel) the Nth time the run reaches STEP (Config.Checkpoint). It exits 3
// when the run ends without reaching it.
const killedRunVerb = "__killed_run"

func killedRunMain(args []string) int {
	if len(args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: __killed_run REPO STATE_DIR MANIFEST STEP N")
		return 2
	}
	repo, stateDir, path, step := args[0], args[1], args[2], args[3]
	nth, _ := strconv.Atoi(args[4])
	m, err := manifest.Load(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	agents, err := testAgents()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	self, _ := os.Executable()
	sup := []string{self, supervise.SuperviseVerb, "--state-dir", stateDir}
	if step == "handoff" {
		// Killed by the supervisor it starts, before that takes its spec: the launch is cut
		// in the middle (registered, records running, no supervisor with the spec).
		sup = append([]string{self, killStarterVerb, strconv.Itoa(os.Getpid())}, sup[1:]...)
	}
	local := &executor.Local{N: 2, StateDir: stateDir, Self: sup, Agents: agents, KillGrace: 2 * time.Second, HostName: "testhost", Template: Template}
	var mu sync.Mutex
	seen := 0
	cfg := Config{Manifest: m, ManifestPath: path, Repo: repo, RepoName: ".", Executors: []Executor{local}, Log: os.Stderr, PID: os.Getpid(),
		Checkpoint: func(s string) {
			if s != step {
				return
			}
			mu.Lock()
			seen++
			die := seen == nth
			mu.Unlock()
			if die {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}}
	if _, err := Run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "the run ended without reaching %s #%d\n", step, nth)
	return 3
}

// killStarterVerb is a supervisor that first SIGKILLs the run that started it and waits for it
// to be dead: "BINARY __kill_starter PID __supervise ARGS...".
const killStarterVerb = "__kill_starter"

func killStarterMain(args []string) int {
	pid, _ := strconv.Atoi(args[0])
	syscall.Kill(pid, syscall.SIGKILL)
	for {
		if st, ok := proc.ReadStat(pid); !ok || st.State == 'Z' {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return superviseMain(args[2:])
}

// testAgents is the agents config of the tests: "fake" is testdata/agent.sh, "true" /bin/true.
func testAgents() (*agent.Config, error) {
	sh, err := filepath.Abs("testdata/agent.sh")
	if err != nil {
		return nil, err
	}
	return agent.Parse(fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}, "true": {"command": "/bin/true", "terminal": false}}`, sh))
}

// TestResumeAfterSIGKILL kills a run (SIGKILL) at each step where a crash could lose or repeat
// work: before any attempt started, with tasks assigned, with a worktree registered but not
// checked out, with an attempt numbered in the state
// but its supervisor not started, with agents at work, between an attempt's end and the state
// write, between a task's commit and the state write, and during the final writes (state,
// history, report). Then --resume finishes the run: every task completed, its agent run exactly
// once (never two at once), one commit per task on its branch, and state and history validate.
func TestResumeAfterSIGKILL(t *testing.T) {
	for _, c := range []struct {
		step string
		nth  int
		// gateLate opens the agents' gate only once the run is killed: they are at work then.
		gateLate bool
	}{
		{"opened", 1, false},
		{"assigned", 1, false},
		{"registered", 1, false},
		{"registered", 3, false},
		{"launching", 1, false},
		{"launching", 3, false},
		{"handoff", 1, false},
		{"launched", 2, true},
		{"ended", 1, false},
		{"ended", 3, false},
		{"committed", 2, false},
		{"final-state", 1, false},
		{"history", 1, false},
	} {
		t.Run(fmt.Sprintf("%s-%d", c.step, c.nth), func(t *testing.T) {
			w := newWorld(t)
			tmp := t.TempDir()
			log, gate := filepath.Join(tmp, "agents.log"), filepath.Join(tmp, "gate")
			if !c.gateLate {
				os.WriteFile(gate, nil, 0o600)
			}
			words := fmt.Sprintf("once:%s waitfor:%s", log, gate)
			doc := fmt.Sprintf(`name: killed
defaults: {agent: fake, retries: 0}
tasks:
  - {id: a, prompt: "%[1]s write:a.txt", branch: a, priority: high}
  - {id: b, prompt: "%[1]s write:b.txt", branch: b, depends_on: [a]}
  - {id: c, prompt: "%[1]s commit:c.txt", branch: c, depends_on: [a]}
  - {id: d, prompt: "%[1]s write:d.txt", branch: d, depends_on: [b, c]}
  - {id: e, prompt: "%[1]s write:e.txt", branch: e, priority: low}
`, words)
			cfg := w.config(t, doc, 2)
			self, _ := os.Executable()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, self, killedRunVerb, w.repo, w.stateDir, cfg.ManifestPath, c.step, strconv.Itoa(c.nth))
			var stderr syncBuf
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the run was not killed at %s #%d: %v\n%s", c.step, c.nth, err, stderr.String())
			}
			p := Paths{Root: w.repo}
			checkValid(t, p.State())
			os.WriteFile(gate, nil, 0o600)

			cfg.Resume = true
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("--resume: %v\n%s\nkilled run:\n%s", err, w.log.String(), stderr.String())
			}
			st := checkValid(t, p.State())
			checkValid(t, p.History(st.ExecutionID))
			if _, err := os.Stat(p.Report(st.ExecutionID)); err != nil {
				t.Errorf("no report: %v", err)
			}
			if res.State.Status != ExecCompleted || st.Status != ExecCompleted || st.Summary == nil || st.Summary.Completed != 5 {
				for _, id := range st.Order {
					if e := st.Tasks[id].Error; e != nil {
						t.Logf("%s: %+v", id, *e)
						if e.AgentLogs != nil {
							t.Logf("%s", *e.AgentLogs)
						}
					}
				}
				wl, _ := gitCmd(context.Background(), w.repo, "worktree", "list")
				t.Fatalf("after --resume: %s, summary %+v\n%s\nkilled run:\n%s\nworktrees:\n%s", st.Status, st.Summary, w.log.String(), stderr.String(), wl)
			}
			// Each agent ran once, alone.
			b, _ := os.ReadFile(log)
			runs := map[string][]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				f := strings.Fields(line)
				runs[f[0]] = append(runs[f[0]], strings.Join(f[1:], " "))
			}
			for _, id := range []string{"a", "b", "c", "d", "e"} {
				task := st.Tasks[id]
				tr := task.Trace
				if tr == nil {
					t.Errorf("task %s has no trace", id)
					continue
				}
				// An attempt whose launch was cut short never ran its agent: the next is 2.
				if got, want := strings.Join(runs[id], ", "), fmt.Sprintf("start %d, end %d 0", tr.Attempt, tr.Attempt); got != want {
					t.Errorf("task %s's agent: %q, want it started and ended once (%q)", id, got, want)
				}
				if task.Status != Completed || tr.Attempt < 1 || tr.Attempt > 2 || tr.CommitSHA == nil || tr.BaseSHA == "" {
					t.Errorf("task %s: %s, trace %+v", id, task.Status, tr)
					continue
				}
				if head := git(t, w.repo, "rev-parse", "refs/heads/"+task.Branch); head != *tr.CommitSHA {
					t.Errorf("task %s: branch at %s, commit_sha %s", id, head, *tr.CommitSHA)
				}
				if n := git(t, w.repo, "rev-list", "--count", tr.BaseSHA+".."+*tr.CommitSHA); n != "1" {
					t.Errorf("task %s: %s commits on its base, want 1", id, n)
				}
				// Its work is in its commit (an adopted agent's worktree was kept under it).
				if got, err := gitCmd(context.Background(), w.repo, "show", *tr.CommitSHA+":"+id+".txt"); err != nil || got != id {
					t.Errorf("task %s: %s.txt in its commit = %q, %v", id, id, got, err)
				}
				run, err := record.ReadRun(record.Store{Dir: w.stateDir}.RunPath(tr.Bead))
				if err != nil || run.Attempt != tr.Attempt || run.Status != record.StatusDone {
					t.Errorf("task %s: run record %+v, %v", id, run, err)
				}
			}
			if t.Failed() {
				t.Logf("resumed run:\n%s\nkilled run:\n%s", w.log.String(), stderr.String())
			}
		})
	}
}

// TestPrepareWorktreeAfterACutAdd: a run killed inside git worktree add leaves the worktree
// registered (locked while initializing) and its directory missing; the task's next worktree
// replaces it.
func TestPrepareWorktreeAfterACutAdd(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	path := Paths{Root: w.repo}.Worktree("x")
	if _, err := (gitx.Repo{Dir: w.repo}).PrepareWorktree(ctx, path, "x", gitx.MergeSpec{Base: git(t, w.repo, "rev-parse", "main"), Label: "swarm run", Beneath: w.repo}); err != nil {
		t.Fatal(err)
	}
	git(t, w.repo, "worktree", "lock", "--reason", "initializing", path)
	os.RemoveAll(path)
	base, err := gitx.Repo{Dir: w.repo}.PrepareWorktree(ctx, path, "x", gitx.MergeSpec{Base: git(t, w.repo, "rev-parse", "main"), Label: "swarm run", Beneath: w.repo})
	if err != nil || base != git(t, w.repo, "rev-parse", "main") {
		t.Fatalf("prepareWorktree over a half-made worktree = %s, %v", base, err)
	}
}
