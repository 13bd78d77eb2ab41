// Package executor runs task attempts: on this machine (Local), or on a host of hosts.yaml over
// OpenSSH (Remote, dialed by DialHosts). swarm run's scheduler and ralph queue run hand each
// attempt of a task to an Executor and read its Outcome.
package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/agent"
	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

// Slot is one agent of an executor: a place where one task attempt runs at a time. Its ID is
// the agent id of the state ("local-1", "h1-3"); Host and Port where it is reached.
type Slot struct {
	ID   string
	Host string
	Port *int
}

// Job is one attempt of a task, as the scheduler hands it to an executor.
type Job struct {
	Task string
	// Bead is <execution>-<task>: the attempt's run and result records.
	Bead string
	// Agent and Model name the agent profile and model the task runs with.
	Agent, Model string
	Prompt       string
	// Dir is the task's worktree, where the agent works; Repo is the repository its run record
	// names (default Dir).
	Dir     string
	Repo    string
	Branch  string
	Timeout time.Duration
	// Inactivity, when above 0, stops a local attempt whose agent printed nothing for that
	// long (status timeout, as Timeout does). A remote host's dispatch has no such setting.
	Inactivity time.Duration
	// MaxAttempts is how many attempts the task gets (the records' max_retries).
	MaxAttempts int
	// Adopt, when above 0, is the attempt an earlier run of the execution launched: if the
	// bead's records are that attempt's, the executor waits for it (or judges its end) instead
	// of launching another. A run killed while its agents worked is resumed this way.
	Adopt int
	// Env is what the attempt adds to the agent's environment.
	Env []string
	// Prepare, when set, is given a local attempt's number and its agent's command line once
	// it is numbered, before Launched: it returns the command line to run (ralph queue run adds
	// claude's --settings), or an error that refuses the launch (the queue finds the task taken
	// from its agent meanwhile): the attempt is closed without running, and the failed Outcome
	// carries the error in Err. Remote does not call it: the host's dispatch makes the
	// command line there.
	Prepare func(n int, argv []string) ([]string, error)
	// Launched is called with the attempt's number once it is numbered, before it starts, so
	// that the state names it before any agent of it runs.
	Launched func(n int)
	// Checkpoint, when set, is called with "launched" once the attempt's supervisor has its
	// spec (Config.Checkpoint).
	Checkpoint func(step string)
	// Heartbeat, when set, is told of each successful read of a remote attempt's records
	// (its agent's last_heartbeat).
	Heartbeat func(time.Time)
}

// Offline is an attempt cut off by its host going offline: the task goes back to the queue
// and must not run elsewhere before NotBefore (the attempt may still run there until then).
type Offline struct {
	Host          string
	LastHeartbeat time.Time // the last successful read there (zero: none)
	NotBefore     time.Time
}

// Outcome is how an attempt ended, as an executor reports it.
type Outcome struct {
	Attempt  int
	Status   string // record.StatusDone, StatusFailed or StatusTimeout
	Reason   string
	ExitCode *int
	Started  time.Time
	Finished time.Time
	// Logs is the end of the agent's output, its control sequences stripped.
	Logs string
	// Interrupted says ctx ended before the attempt did: it was stopped (Status is what its
	// supervisor recorded then), and it does not count as a try.
	Interrupted bool
	// Offline, when set, says the executor's host stopped answering: the attempt does not
	// count as a try, the executor gets no more tasks.
	Offline *Offline
	// Run is the run record a local attempt was judged by (nil when none could be read): what
	// a policy reads besides (its duration in whole seconds, as the records keep it).
	Run *record.Run
	// Err is why the attempt could not be launched or judged, when that is so (Reason names
	// it too, after the step that failed).
	Err error
}

// Executor runs task attempts: this machine (Local), or a remote host. Run blocks until the
// attempt has ended and is recorded, or ctx ended and the attempt was stopped.
type Executor interface {
	// Host names where the executor runs its attempts (the joblog's host column).
	Host() string
	// Slots are its agents: at most one attempt runs in each at a time.
	Slots() []Slot
	// Run runs one attempt of job in slot.
	Run(ctx context.Context, slot Slot, job Job) Outcome
}

// Local is this machine as an executor: each attempt is one of dispatch's (attempt.Open, its
// spec built by attempt.Machine.Spec as a dispatch's is, bead <execution>-<task>), its run and
// result records in StateDir (analyze-runs reports them).
// Each slot keeps one supervisor, detached so that its attempt outlives the run, serving the
// slot's attempts one after another (attempt.StartServer); one that is lost is replaced at the
// slot's next attempt. Close lets them go.
type Local struct {
	// N is how many attempts run at once.
	N int
	// StateDir is where the records go (absolute).
	StateDir string
	// Self is the supervisor verb's command line (this binary's "run __supervise --state-dir
	// DIR"); attempt.Launch adds the handoff and the bead.
	Self []string
	// Agents is the agents config the tasks' agents are looked up in.
	Agents *agent.Config
	// Getenv is the environment the models are chosen in (DISPATCH_<AGENT>_MODEL), nil none.
	Getenv func(string) string
	// Env is the agents' environment, to which each attempt adds its own.
	Env       []string
	KillGrace time.Duration
	MinFreeMB int64
	// HostName is the host the state names (default: os.Hostname).
	HostName string
	// Template is the template name the run records carry (swarmrun.Template), so that
	// analyze-runs groups the attempts of one kind of run.
	Template string

	mu      sync.Mutex
	servers map[string]*attempt.Server // by slot
}

// Host is ":" as GNU parallel's joblog names this machine.
func (l *Local) Host() string { return ":" }

// Slots are local-1 … local-N.
func (l *Local) Slots() []Slot {
	host := l.HostName
	if host == "" {
		host, _ = os.Hostname()
	}
	out := make([]Slot, l.N)
	for i := range out {
		out[i] = Slot{ID: fmt.Sprintf("local-%d", i+1), Host: host}
	}
	return out
}

func (l *Local) dir() attempt.Dir { return attempt.NewDir(l.StateDir) }

func (l *Local) where() attempt.Where {
	return attempt.Where{Backend: supervise.BackendProcess, KillGrace: l.KillGrace}
}

// Run launches the attempt (or adopts the one job.Adopt names) and waits for its end.
func (l *Local) Run(ctx context.Context, slot Slot, job Job) Outcome {
	d := l.dir()
	if job.Adopt > 0 {
		// A launch cut short (the run died before its supervisor had the spec) never ran its
		// agent: it is closed (supervisor-lost, archived) by the next Open, and the task
		// launches its next attempt, not counted as a try.
		if run, err := record.ReadRun(d.Store.RunPath(job.Bead)); err == nil && run.Attempt == job.Adopt && !LaunchCut(ctx, d, job.Bead, job.Adopt) {
			return l.await(ctx, slot, nil, job.Bead, job.Adopt)
		}
	}
	// Once numbered, the attempt is launched whole whatever happens to ctx: a half launch would
	// be a failed attempt; a whole one is stopped by await like any other.
	lctx := context.WithoutCancel(ctx)
	opened, err := attempt.Open(lctx, d, job.Bead, l.where(), false)
	if err != nil {
		if job.Adopt > 0 && errors.Is(err, attempt.ErrRunning) {
			// Judged cut short, but its serving supervisor claimed it meanwhile: adopted.
			return l.await(ctx, slot, nil, job.Bead, job.Adopt)
		}
		return failed(0, "launch-failed", err)
	}
	n := opened.Number
	spec, err := l.spec(slot, job, n)
	if err != nil {
		opened.Close()
		return failed(n, "launch-failed", err)
	}
	if job.Launched != nil {
		job.Launched(n)
	}
	launched := time.Now()
	srv, err := l.launch(lctx, slot, opened, spec)
	if err != nil {
		out := Judge(lctx, l.dir(), job.Bead, n)
		// What the records say first, else the launch's error.
		out.Reason = cmp.Or(out.Reason, oneLine(err))
		out.Err = cmp.Or(out.Err, err)
		return out
	}
	if job.Checkpoint != nil {
		job.Checkpoint("launched")
	}
	out := l.await(ctx, slot, srv, job.Bead, n)
	// The records keep whole seconds (dispatch.sh's format): a task of 0.4 s would last 0 s
	// and a run of such tasks report no parallel speedup. An attempt launched here is timed by
	// this clock, from its launch to its judged end.
	out.Started, out.Finished = launched, time.Now()
	return out
}

// launch hands the opened attempt to the slot's serving supervisor and returns it; it closes
// opened. When no serving supervisor can be started, the attempt gets a supervisor of its own
// (attempt.Launch), and the returned server is nil. An error is an attempt that did not start:
// the caller judges it by its records.
func (l *Local) launch(ctx context.Context, slot Slot, opened *attempt.Opened, spec *attempt.Spec) (*attempt.Server, error) {
	srv, err := l.server(slot)
	if err != nil {
		defer opened.Close()
		_, err := opened.Launch(ctx, spec, l.Self)
		return nil, err
	}
	_, err = opened.Register(ctx, spec)
	// The supervisor claims the attempt under the bead's lock: let go first.
	opened.Close()
	if err != nil {
		return nil, err
	}
	if err := srv.Hand(ctx, spec); err != nil {
		// It refused or is gone: the attempt, registered and never claimed (or claimed and
		// lost with it), is judged by its records; the slot's next attempt gets a new one.
		l.drop(slot, srv)
		return nil, err
	}
	return srv, nil
}

// server is slot's serving supervisor, started when it has none or its last one is gone.
func (l *Local) server(slot Slot) (*attempt.Server, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.servers[slot.ID]; s != nil {
		select {
		case <-s.Gone():
		default:
			return s, nil
		}
	}
	s, err := attempt.StartServer(l.Self, l.StateDir, slot.ID)
	if err != nil {
		return nil, err
	}
	if l.servers == nil {
		l.servers = map[string]*attempt.Server{}
	}
	l.servers[slot.ID] = s
	return s, nil
}

// drop ends and forgets slot's serving supervisor srv (its attempt, if any, is lost with it).
func (l *Local) drop(slot Slot, srv *attempt.Server) {
	srv.Kill()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.servers[slot.ID] == srv {
		delete(l.servers, slot.ID)
	}
}

// closeWait is how long Close waits for an idle serving supervisor to exit.
const closeWait = 10 * time.Second

// Close lets the slots' serving supervisors go and waits for them to exit: they have no
// attempt once the run has waited for every one. (A runner that dies lets them go as well:
// each exits once its attempt is recorded.)
func (l *Local) Close() {
	l.mu.Lock()
	servers := l.servers
	l.servers = nil
	l.mu.Unlock()
	deadline := time.After(closeWait)
	for _, s := range servers {
		s.Close()
	}
	for _, s := range servers {
		select {
		case <-s.Gone():
		case <-deadline:
			return
		}
	}
}

// LaunchCut says whether attempt n of bead in d was registered but never handed to a
// supervisor: its registry entry still says launching (pid 0) and no supervisor of the bead is
// alive. A supervisor of the bead found alive (it took its spec as its starter died) is waited
// for until it registers itself or is gone. Such an attempt never ran its agent: an adoption
// (Local.Run's, the queue's recovery) starts the task again, no try counted.
func LaunchCut(ctx context.Context, d attempt.Dir, bead string, n int) bool {
	for ctx.Err() == nil {
		e, _ := d.Layout.ReadEntry(bead)
		if e == nil || e.Attempt != n || e.PID != 0 {
			return false
		}
		// A live supervisor of bead, found in /proc.
		pids := proc.PIDs()
		i := slices.IndexFunc(pids, func(pid int) bool { return supervise.SupervisorAlive(pid, bead) })
		if i < 0 {
			return true
		}
		supervise.WaitExit(ctx, &supervise.Entry{PID: pids[i], Name: bead}, 100*time.Millisecond)
	}
	return false
}

// spec is the job's attempt n as its supervisor is handed it: a task of its own (its agent
// looked up with its model, the prompt sent as it is (no dispatch additions) asking claude for
// its JSON result, the records' max_retries never below n, and the agents' environment with the
// job's and the slot's (SWARM_AGENT_ID)) made a spec by attempt.Machine.Spec, as a dispatch's
// is, with the job's Prepare applied to the agent's command line.
func (l *Local) spec(slot Slot, job Job, n int) (*attempt.Spec, error) {
	if l.Agents == nil {
		return nil, errors.New("no agents config")
	}
	profile, err := l.Agents.Lookup(job.Agent)
	if err != nil {
		return nil, err
	}
	getenv := l.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	t := &attempt.Task{Bead: job.Bead, Profile: profile, Config: l.Agents, Model: profile.Model(job.Model, getenv),
		Repo: cmp.Or(job.Repo, job.Dir), Prompt: job.Prompt, Template: l.Template, MaxRetries: max(job.MaxAttempts, n), Bare: true,
		JSONOutput: true, Timeout: job.Timeout, Inactivity: job.Inactivity,
		Env: slices.Concat(l.Env, job.Env, []string{"SWARM_AGENT_ID=" + slot.ID})}
	m := attempt.Machine{Dir: l.dir(), StateDir: l.StateDir, Backend: supervise.BackendProcess,
		KillGrace: l.KillGrace, MinFreeMB: l.MinFreeMB}
	spec := m.Spec(t, n, job.Dir, job.Branch)
	if job.Prepare != nil {
		if spec.Attempt.Argv, err = job.Prepare(n, spec.Attempt.Argv); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

// await waits for attempt n of bead to be recorded, and judges it. The attempt is run by slot's
// serving supervisor srv or, when srv is nil, by a supervisor of its own (awaitOwn). When ctx
// ends first, the supervisor is stopped (SIGTERM: it stops the agent, records the end and
// exits) and the attempt reported Interrupted. A serving supervisor lost meanwhile is
// forgotten: its attempt is judged by its records (supervisor-lost).
func (l *Local) await(ctx context.Context, slot Slot, srv *attempt.Server, bead string, n int) Outcome {
	interrupted := false
	if srv == nil {
		interrupted = l.awaitOwn(ctx, bead)
	} else {
		err := srv.Wait(ctx)
		if interrupted = err != nil && ctx.Err() != nil; interrupted {
			syscall.Kill(srv.Pid, syscall.SIGTERM)
			err = srv.Wait(context.Background())
		}
		if err != nil || interrupted {
			l.drop(slot, srv)
		}
	}
	out := Judge(context.WithoutCancel(ctx), l.dir(), bead, n)
	out.Interrupted = interrupted
	return out
}

// awaitOwn waits until the supervisor of bead's attempt has ended. When ctx ends first, the
// attempt runs on until it is stopped: its supervisor gets SIGTERM (it stops the agent, giving
// it the kill grace, and records the end), is waited for until it has ended, and interrupted is
// true (taskgraph's meaning of interrupted).
func (l *Local) awaitOwn(ctx context.Context, bead string) (interrupted bool) {
	d, w := l.dir(), l.where()
	for {
		live, entry := attempt.Alive(context.Background(), d, w, bead)
		if !live {
			return interrupted
		}
		wctx, limit := ctx, time.Duration(0)
		if ctx.Err() != nil {
			if !interrupted {
				attempt.Stop(context.Background(), nil, entry, "", syscall.SIGTERM)
			}
			interrupted, wctx, limit = true, context.Background(), w.KillGrace+10*time.Second
		}
		supervise.WaitExit(wctx, entry, limit)
	}
}

// failed is an attempt that could not run.
func failed(n int, reason string, err error) Outcome {
	t := time.Now()
	return Outcome{Attempt: n, Status: record.StatusFailed, Reason: reason + ": " + oneLine(err), Started: t, Finished: t, Err: err}
}

// oneLine is err's message on one line.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
