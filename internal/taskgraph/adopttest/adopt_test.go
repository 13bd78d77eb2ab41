package adopttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/testenv/lockedbuf"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/manifest"
	"github.com/agentfleet/fleet/internal/ralph/queue/runner"
	"github.com/agentfleet/fleet/internal/ralph/queue/store"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/swarmrun"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/labconn"
	"github.com/agentfleet/fleet/internal/testenv/sshlab"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
)

// killedVerb makes the test binary an engine's run for the test to SIGKILL:
// "BINARY __killed_engine ENGINE DIR", DIR the world's directory (newWorld).
const killedVerb = "__killed_engine"

// TestMain makes the test binary the attempts' supervisor too (both engines start it as
// "BINARY __supervise --state-dir DIR ..."), and the run to kill.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervise.SuperviseVerb {
		os.Exit(testenv.Supervisor(os.Args[2:], func(ctx context.Context, a cli.SupervisorArgs, _ *os.File) error {
			return attempt.Supervise(ctx, a.StateDir, a.Handoff, a.Name, os.Stdout, nil)
		}))
	}
	if len(os.Args) == 4 && os.Args[1] == killedVerb {
		os.Exit(killedMain(os.Args[2], os.Args[3]))
	}
	os.Exit(sweep.Guard(m).Run())
}

// killedMain runs engine name in the world at dir until it is killed: 3 when it ends first.
func killedMain(name, dir string) int {
	e := engines[name]
	if e == nil {
		fmt.Fprintf(os.Stderr, "no engine %q\n", name)
		return 2
	}
	if err := e.run(context.Background(), worldAt(dir), os.Stderr, false); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "the run ended before it was killed")
	return 3
}

// world is where an engine runs: a repository on branch main, a state directory, the agents'
// log and the gate the first task's agent waits for.
type world struct {
	dir, repo, stateDir, log, gate string
	// hosts is the lab's hosts ([]*remote.Host as JSON) the engine runs its tasks on, when the
	// file exists (newWorld's onHosts); else it runs them here.
	hosts string
}

func worldAt(dir string) *world {
	return &world{dir: dir, repo: filepath.Join(dir, "repo"), stateDir: filepath.Join(dir, "state"),
		log: filepath.Join(dir, "agents.log"), gate: filepath.Join(dir, "gate"), hosts: filepath.Join(dir, "hosts.json")}
}

// onHosts says whether the world's tasks run on the lab's hosts.
func (w *world) onHosts() bool {
	_, err := os.Stat(w.hosts)
	return err == nil
}

// remotes dials the world's hosts, each an executor of its own logging to log.
func (w *world) remotes(log io.Writer) ([]*executor.Remote, error) {
	conns, err := labconn.Dial(w.hosts)
	if err != nil {
		return nil, err
	}
	var execs []*executor.Remote
	for _, c := range conns {
		execs = append(execs, &executor.Remote{Conn: c, Repo: w.repo, StateDir: w.stateDir, Every: 200 * time.Millisecond,
			OfflineAfter: 3 * time.Second, KillGrace: time.Second, Log: log})
	}
	return execs, nil
}

// labVersion is the version the hosts' dispatch is built with.
const labVersion = "sshlab-adopttest"

// remoteAdopting is what a host's executor logs as it waits for an attempt of an earlier run.
const remoteAdopting = "a: attempt 1 of an earlier run still runs here: waiting for it"

// prompts are the two tasks' words: a waits for the gate, b depends on a.
func (w *world) prompts() (a, b string) {
	return fmt.Sprintf("log:%s wait:%s write:a.txt", w.log, w.gate), fmt.Sprintf("log:%s write:b.txt", w.log)
}

// agents is the stand-in agent as agent "fake".
func agents() (*agent.Config, error) {
	sh, err := filepath.Abs("testdata/agent.sh")
	if err != nil {
		return nil, err
	}
	return agent.Parse(fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}}`, sh))
}

// supervisor is the command line both engines start an attempt's supervisor with.
func (w *world) supervisor() []string {
	self, _ := os.Executable()
	return []string{self, supervise.SuperviseVerb, "--state-dir", w.stateDir}
}

// engine is one policy of the Scheduler as a test runs it: two tasks made ready to run (a,
// then b after it), a run (resuming an earlier one) that fails unless both ended well, and the
// line its log has once it waits for an attempt of an earlier run.
type engine interface {
	adopting() string
	prepare(t *testing.T, w *world)
	run(ctx context.Context, w *world, log io.Writer, resume bool) error
}

var engines = map[string]engine{"swarm-run": swarmEngine{}, "queue": queueEngine{}}

// swarmEngine is swarm run: a manifest, two local slots, --resume.
type swarmEngine struct{}

func (swarmEngine) adopting() string { return "a: waiting for attempt 1, from an earlier run" }

func (swarmEngine) manifest(w *world) string { return filepath.Join(w.dir, "work.yaml") }

func (e swarmEngine) prepare(t *testing.T, w *world) {
	a, b := w.prompts()
	doc := fmt.Sprintf(`name: adopted
base_branch: main
defaults: {agent: fake, retries: 0, timeout: 120}
tasks:
  - {id: a, prompt: %q, branch: a}
  - {id: b, prompt: %q, branch: b, depends_on: [a]}
`, a, b)
	if err := os.WriteFile(e.manifest(w), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (e swarmEngine) run(ctx context.Context, w *world, log io.Writer, resume bool) error {
	m, err := manifest.Load(e.manifest(w))
	if err != nil {
		return err
	}
	ag, err := agents()
	if err != nil {
		return err
	}
	execs := []swarmrun.Executor{&executor.Local{N: 2, StateDir: w.stateDir, Self: w.supervisor(), Agents: ag,
		KillGrace: 2 * time.Second, HostName: "testhost", Template: swarmrun.Template}}
	if w.onHosts() {
		remotes, err := w.remotes(log)
		if err != nil {
			return err
		}
		execs = nil
		for _, r := range remotes {
			execs = append(execs, r)
		}
	}
	res, err := swarmrun.Run(ctx, swarmrun.Config{Manifest: m, ManifestPath: e.manifest(w), Repo: w.repo, RepoName: ".",
		Executors: execs, Log: log, PID: os.Getpid(), Resume: resume})
	if err != nil {
		return err
	}
	if res.State.Status != swarmrun.ExecCompleted {
		return fmt.Errorf("swarm run ended %s", res.State.Status)
	}
	return nil
}

// queueEngine is ralph queue run: plan p's queue, two agents, --worktree.
type queueEngine struct{}

func (queueEngine) adopting() string { return "still running a (attempt 1), from the last run" }

func (queueEngine) store(w *world) *store.Store { return store.New(store.In(w.repo), "p") }

func (e queueEngine) prepare(t *testing.T, w *world) {
	a, b := w.prompts()
	now := record.FormatTime(time.Now())
	err := e.store(w).Update(context.Background(), func(tx *store.Tx) error {
		q := store.NewQueue("p", now, nil)
		q.Put(store.Task{ID: "a", Description: a, Status: store.Pending, Dependencies: []string{}, CreatedAt: now})
		q.Put(store.Task{ID: "b", Description: b, Status: store.Pending, Dependencies: []string{"a"}, CreatedAt: now})
		tx.SetQueue(q)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e queueEngine) run(ctx context.Context, w *world, log io.Writer, _ bool) error {
	ag, err := agents()
	if err != nil {
		return err
	}
	profile, err := ag.Lookup("fake")
	if err != nil {
		return err
	}
	s := e.store(w)
	// Held as ralph queue run holds it: the kill releases it.
	unlock, err := s.Dir.LockRunner(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	cfg := runner.Config{Store: s, Agents: 2, Profile: profile, AgentName: "fake",
		Model: profile.Model("", func(string) string { return "" }), MaxRetries: 1, Repo: w.repo, Worktree: true,
		StateDir: w.stateDir, Self: w.supervisor(), Env: os.Environ(), Timeout: 2 * time.Minute, KillGrace: time.Second,
		MinFreeMB: 1, Log: log}
	if w.onHosts() {
		if cfg.Hosts, err = w.remotes(log); err != nil {
			return err
		}
	}
	res, err := runner.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if res.Counts[store.Done] != 2 {
		return fmt.Errorf("the queue ended with %v", res.Counts)
	}
	return nil
}

// newWorld makes a world in a directory of the test's: a repository with one commit on main;
// onHosts, a lab of one sshd host of two slots too, its clone of the repository made.
func newWorld(t *testing.T, onHosts bool) *world {
	w := worldAt(t.TempDir())
	for _, d := range []string{w.repo, w.stateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "test@example.com"},
		{"config", "user.name", "test"}, {"commit", "-q", "--allow-empty", "-m", "base"}} {
		if _, err := (gitx.Cmd{Dir: w.repo}).Run(context.Background(), args...); err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
	}
	t.Cleanup(func() { killSupervisors(w.stateDir) })
	if onHosts {
		w.lab(t)
	}
	return w
}

// lab starts the world's host and writes it into w.hosts.
func (w *world) lab(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an sshd host in a network namespace")
	}
	lab := sshlab.New(t, 1)
	sh, _ := filepath.Abs("testdata/agent.sh")
	config := filepath.Join(w.dir, "agents.json")
	if err := os.WriteFile(config, fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false}}`, sh), 0o644); err != nil {
		t.Fatal(err)
	}
	var hosts []*remote.Host
	for _, c := range labconn.Hosts(t, lab, w.repo, config, labVersion, 2) {
		hosts = append(hosts, c.Host)
	}
	b, _ := json.Marshal(hosts)
	if err := os.WriteFile(w.hosts, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// killSupervisors kills every supervisor still registered in stateDir (a failed test's).
func killSupervisors(stateDir string) {
	layout := supervise.Layout{Dir: stateDir}
	for _, name := range layout.Registered(func(string) bool { return true }) {
		if e, _ := layout.ReadEntry(name); e != nil && supervise.SupervisorAlive(e.PID, name) {
			syscall.Kill(e.PID, syscall.SIGKILL)
		}
	}
}

// logBuf is a log written by several goroutines and read while they write.
type logBuf = lockedbuf.Buffer

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// waitFor polls what (a file, a log) until cond holds, at most 60 s; then it shows logs.
func waitFor(t *testing.T, what string, cond func() bool, logs ...*logBuf) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 60 s\n%v", what, logs)
		}
	}
}

// TestAdoptionAfterSIGKILL, for each policy of the Scheduler, here and on a lab's sshd host: the
// runner is SIGKILLed while the first task's agent works (its supervisor outlives it). Its agent ends while no runner is there
// (ended), or while the next run waits for it (at work). The next run adopts the attempt: its
// task is done without running its agent again, and the task that depends on it runs then, once.
func TestAdoptionAfterSIGKILL(t *testing.T) {
	for _, c := range []struct {
		engine          string
		atWork, onHosts bool
	}{
		{"swarm-run", false, false}, {"swarm-run", true, false}, {"queue", false, false}, {"queue", true, false},
		{"swarm-run", false, true}, {"swarm-run", true, true}, {"queue", false, true}, {"queue", true, true},
	} {
		name := c.engine + "/ended"
		if c.atWork {
			name = c.engine + "/at-work"
		}
		if c.onHosts {
			name += "-on-a-host"
		}
		t.Run(name, func(t *testing.T) {
			e := engines[c.engine]
			w := newWorld(t, c.onHosts)
			e.prepare(t, w)
			self, _ := os.Executable()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			killed := exec.CommandContext(ctx, self, killedVerb, c.engine, w.dir)
			first := &logBuf{}
			killed.Stderr, killed.Env = first, testenv.KilledEnv(t)
			if err := killed.Start(); err != nil {
				t.Fatal(err)
			}
			// a's agent at work: the runner is killed.
			started := func() bool { return strings.Contains(readFile(w.log), "a start 1") }
			for deadline := time.Now().Add(60 * time.Second); !started(); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					killed.Process.Kill()
					killed.Wait()
					t.Fatalf("a's agent never started:\n%s", first)
				}
			}
			killed.Process.Signal(syscall.SIGKILL)
			err := killed.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the run was not killed: %v\n%s", err, first)
			}
			openGate := func() {
				if err := os.WriteFile(w.gate, nil, 0o600); err != nil {
					t.Error(err)
				}
			}
			if !c.atWork {
				// The agent ends while no runner watches it, its supervisor recording its end.
				openGate()
				waitFor(t, "a's agent ends", func() bool { return strings.Contains(readFile(w.log), "a end 1") })
			}
			second := &logBuf{}
			ended := make(chan error, 1)
			go func() { ended <- e.run(ctx, w, second, true) }()
			if c.atWork {
				adopting := e.adopting()
				if c.onHosts {
					adopting = remoteAdopting
				}
				waitFor(t, "the next run waits for a's attempt", func() bool { return strings.Contains(second.String(), adopting) }, second)
				openGate()
			}
			if err := <-ended; err != nil {
				t.Fatalf("the next run: %v\n%s\nkilled run:\n%s", err, second, first)
			}
			if got, want := readFile(w.log), "a start 1\na end 1\nb start 1\nb end 1\n"; got != want {
				t.Errorf("the agents ran:\n%s\nwant each once, a's attempt adopted:\n%s\nthe next run:\n%s\nkilled run:\n%s",
					got, want, second, first)
			}
		})
	}
}
