package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/postmortem"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestAIWG runs testdata/aiwg-*.txtar: AIWG's loops, with testdata/aiwg-agent.sh as the agent
// (an agents config whose "claude" is that script), in a git repository at $WORK/repo.
func TestAIWG(t *testing.T) {
	files, _ := filepath.Glob("testdata/aiwg-*.txtar")
	testscript.Run(t, testscript.Params{
		Files:    files,
		Setup:    aiwgSetup,
		Cmds:     aiwgCmds,
		Deadline: time.Now().Add(5 * time.Minute),
	})
}

func aiwgSetup(env *testscript.Env) error {
	testenv.Mark(env)
	agentPath, _ := filepath.Abs("testdata/aiwg-agent.sh")
	config := filepath.Join(env.WorkDir, "agents.json")
	cfg := fmt.Sprintf(`{"claude": {"command": %q, "flags": ["-p"], "model_flag": "--model", "default_model": "opus", "terminal": false},
	  "plain": {"command": %q, "cost_pattern": "spent=\\$([0-9.]+)"},
	  "tty": {"command": %q, "usage_limit": ["(?i)usage limit reached"]},
	  "missing": {"command": "/nonexistent/agent"},
	  "broken": {"command": %q, "terminal": false}}`, agentPath, agentPath, agentPath, filepath.Join(env.WorkDir, "broken.sh"))
	if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
		return err
	}
	repo := filepath.Join(env.WorkDir, "repo")
	if err := testenv.GitRepo(repo); err != nil {
		return err
	}
	env.Setenv("CONFIG_FILE", config)
	env.Setenv("HOME", env.WorkDir)
	env.Setenv("SWARM_DIR", filepath.Join(env.WorkDir, "swarm"))
	env.Setenv("AIWG_AGENT_DIR", filepath.Join(env.WorkDir, "agent"))
	env.Setenv("AIWG_PLAN", filepath.Join(env.WorkDir, "plan"))
	// Whatever a script leaves running (a failed script's background loop) is stopped.
	env.Defer(func() { killLoops(repo) })
	// A private tmux server for the scripts that make a swarm loop too (its socket path must
	// be short: $WORK is too deep).
	sockDir, err := os.MkdirTemp("", "aw")
	if err != nil {
		return err
	}
	env.Setenv("TMUX_TMPDIR", sockDir)
	env.Setenv("TMUX", "")
	env.Defer(func() {
		sockets, _ := filepath.Glob(filepath.Join(sockDir, "tmux-*", "*"))
		for _, s := range sockets {
			exec.Command("tmux", "-S", s, "kill-server").Run()
		}
		os.RemoveAll(sockDir)
	})
	// A failed script shows its loops' logs and states, before anything is stopped.
	env.Defer(func() {
		socks, _ := filepath.Glob(filepath.Join(sockDir, "tmux-*", "*"))
		postmortem.OnFailure(env.T().(postmortem.TB), env.WorkDir, socks...)
	})
	return nil
}

// killLoops kills the controllers and supervisors of the loops under repo that still run.
func killLoops(repo string) {
	ws := aiwg.Workspace{Root: repo}
	for _, id := range ws.Loops() {
		if st, err := ws.ReadState(id); err == nil && st.PID != nil {
			if args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", *st.PID)); bytes.Contains(args, []byte(id)) {
				syscall.Kill(*st.PID, syscall.SIGKILL)
			}
		}
	}
	sups, _ := filepath.Glob(filepath.Join(ws.DefaultStateDir(), "supervisors", "*.json"))
	for _, p := range sups {
		var e struct{ PID int }
		if b, err := os.ReadFile(p); err == nil && json.Unmarshal(b, &e) == nil && e.PID > 0 {
			if args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", e.PID)); bytes.Contains(args, []byte("__supervise")) {
				syscall.Kill(e.PID, syscall.SIGKILL)
			}
		}
	}
}

// scriptEnv is the environment of a script's commands, for the processes a command starts.
func scriptEnv(ts *testscript.TestScript) []string {
	env := os.Environ()
	for _, k := range []string{"CONFIG_FILE", "HOME", "SWARM_DIR", "AIWG_AGENT_DIR", "AIWG_PLAN", "PATH"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	return env
}

// loops lists the loop ids of the workspace at dir, oldest first.
func loops(dir string) []*aiwg.State {
	ws := aiwg.Workspace{Root: dir}
	var out []*aiwg.State
	for _, id := range ws.Loops() {
		if st, err := ws.ReadState(id); err == nil {
			out = append(out, st)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt < out[j].StartedAt })
	return out
}

var aiwgCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	// loopid VAR [PREFIX]: VAR becomes the id of the workspace's loop whose id starts with
	// PREFIX (the latest one without).
	"loopid": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 1 || len(args) > 2 {
			ts.Fatalf("usage: loopid VAR [PREFIX]")
		}
		var ids []string
		for _, st := range loops(ts.MkAbs(".")) {
			if len(args) == 1 || strings.HasPrefix(st.LoopID, args[1]) {
				ids = append(ids, st.LoopID)
			}
		}
		if len(ids) == 0 || (len(args) == 2 && len(ids) > 1) {
			ts.Fatalf("loopid: %d loops match in %s", len(ids), ts.MkAbs("."))
		}
		ts.Setenv(args[0], ids[len(ids)-1])
	},
	// waitloop ID STATUS [SECONDS]: wait until loop ID has STATUS, and the change that wrote it
	// is whole: the registry is written after the state, under the workspace's lock, which is
	// taken once the state says STATUS (validloops read the registry in between).
	"waitloop": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: waitloop ID STATUS [SECONDS]")
		}
		limit := 30 * time.Second
		if len(args) > 2 {
			n, _ := strconv.Atoi(args[2])
			limit = time.Duration(n) * time.Second
		}
		ws := aiwg.Workspace{Root: ts.MkAbs(".")}
		deadline := time.Now().Add(limit)
		last := ""
		for time.Now().Before(deadline) {
			if st, err := ws.ReadState(args[0]); err == nil {
				last = st.Status
				if st.Status == args[1] {
					if unlock, err := fsx.LockFile(context.Background(), ws.LockPath()); err == nil {
						unlock()
					}
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		ts.Fatalf("loop %s is %q after %s, want %q", args[0], last, limit, args[1])
	},
	// waitfile PATH [SECONDS]: wait until PATH exists.
	"waitfile": func(ts *testscript.TestScript, neg bool, args []string) {
		limit := 30 * time.Second
		if len(args) > 1 {
			n, _ := strconv.Atoi(args[1])
			limit = time.Duration(n) * time.Second
		}
		deadline := time.Now().Add(limit)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		ts.Fatalf("%s does not exist after %s", args[0], limit)
	},
	// validloops: every loop's state.json and checkpoint validates against the loop-state
	// schema (as validate-state --kind loop-state checks it), the registry parses and lists
	// exactly the loops whose state is not terminal, and every iteration's run record exists.
	"validloops": func(ts *testscript.TestScript, neg bool, args []string) {
		s, err := schema.Load("loop-state", "")
		ts.Check(err)
		ws := aiwg.Workspace{Root: ts.MkAbs(".")}
		check := func(name string, doc []byte) {
			problems, err := s.Validate(doc)
			if err != nil || len(problems) > 0 {
				ts.Fatalf("%s does not validate: %v %v", name, err, problems)
			}
		}
		active := map[string]bool{}
		for _, id := range ws.Loops() {
			b, err := os.ReadFile(ws.StatePath(id))
			ts.Check(err)
			check(ws.StatePath(id), b)
			st, err := ws.ReadState(id)
			ts.Check(err)
			if !aiwg.Terminal(st.Status) {
				active[id] = true
			}
			cps, _ := filepath.Glob(filepath.Join(ws.LoopDir(id), "checkpoints", "iteration-*.json.gz"))
			for _, cp := range cps {
				f, err := os.Open(cp)
				ts.Check(err)
				zr, err := gzip.NewReader(f)
				ts.Check(err)
				doc, err := io.ReadAll(zr)
				f.Close()
				ts.Check(err)
				check(cp, doc)
			}
			for _, it := range st.Iterations {
				if _, err := record.ReadRun(filepath.Join(st.StateDir, "runs", it.Bead+".json")); err != nil {
					ts.Fatalf("iteration %d of %s: no run record: %v", it.Number, id, err)
				}
			}
		}
		b, err := os.ReadFile(ws.RegistryPath())
		ts.Check(err)
		var reg aiwg.Registry
		ts.Check(json.Unmarshal(b, &reg))
		listed := map[string]bool{}
		for _, e := range reg.ActiveLoops {
			listed[e.LoopID] = true
			if !active[e.LoopID] {
				ts.Fatalf("registry lists %s, which is not active", e.LoopID)
			}
		}
		for id := range active {
			if !listed[id] {
				ts.Fatalf("registry does not list active loop %s", id)
			}
		}
		if reg.TotalActive != len(reg.ActiveLoops) || reg.MaxConcurrentLoops != aiwg.MaxConcurrent || reg.Version != "2.0.0" {
			ts.Fatalf("registry header wrong: %+v", reg)
		}
	},
	// killpid ID: SIGKILL loop ID's controller (a crash).
	"killcontroller": func(ts *testscript.TestScript, neg bool, args []string) {
		ws := aiwg.Workspace{Root: ts.MkAbs(".")}
		st, err := ws.ReadState(args[0])
		ts.Check(err)
		if st.PID == nil {
			ts.Fatalf("loop %s has no controller", args[0])
		}
		ts.Check(syscall.Kill(*st.PID, syscall.SIGKILL))
		for i := 0; i < 200; i++ {
			if err := syscall.Kill(*st.PID, 0); err != nil {
				return
			}
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", *st.PID)); strings.Contains(string(b), ") Z") {
				return // a zombie: dead, its parent (init) will reap it
			}
			time.Sleep(10 * time.Millisecond)
		}
		ts.Fatalf("controller %d of %s did not die", *st.PID, args[0])
	},
	// abortall: ralph abort every loop of the workspace that is not over.
	"abortall": func(ts *testscript.TestScript, neg bool, args []string) {
		for _, st := range loops(ts.MkAbs(".")) {
			if !aiwg.Terminal(st.Status) {
				ts.Check(ts.Exec("ralph", "abort", st.LoopID))
			}
		}
	},
	// controlwins TRIALS: a loop whose iterations follow each other as fast as they can (an
	// agent that exits at once, a check that fails) is paused at a random moment and resumed,
	// TRIALS times (3 under -race; AIWG_TRIALS overrides), then aborted: after each pause or abort returns,
	// no agent starts and the state says paused (aborted) with no controller.
	"controlwins": func(ts *testscript.TestScript, neg bool, args []string) {
		trials, _ := strconv.Atoi(args[0])
		if aiwgRace {
			trials = 3
		}
		if n, err := strconv.Atoi(os.Getenv("AIWG_TRIALS")); err == nil {
			trials = n
		}
		ralph := func(args ...string) string {
			cmd := exec.Command("ralph", args...)
			cmd.Dir = ts.MkAbs(".")
			cmd.Env = scriptEnv(ts)
			out, err := cmd.CombinedOutput()
			if err != nil {
				ts.Fatalf("ralph %s: %v: %s", strings.Join(args, " "), err, out)
			}
			return string(out)
		}
		calls := func() string {
			b, _ := os.ReadFile(filepath.Join(ts.Getenv("AIWG_AGENT_DIR"), "count"))
			return strings.TrimSpace(string(b))
		}
		ws := aiwg.Workspace{Root: ts.MkAbs(".")}
		ralph("start", "control wins", "--completion", "false", "--max-iterations", "100000", "--no-progress", "0")
		ls := loops(ts.MkAbs("."))
		id := ls[len(ls)-1].LoopID
		settled := func(verb, want string) {
			before := calls()
			time.Sleep(300 * time.Millisecond)
			if after := calls(); after != before {
				ts.Fatalf("after %s returned the agent was started again (calls %s, then %s)", verb, before, after)
			}
			st, err := ws.ReadState(id)
			ts.Check(err)
			if st.Status != want || st.PID != nil {
				ts.Fatalf("after %s: status %s, pid %v", verb, st.Status, st.PID)
			}
		}
		rnd := time.Now().UnixNano()
		for i := 0; i < trials; i++ {
			rnd = rnd*6364136223846793005 + 1442695040888963407
			time.Sleep(time.Duration(uint64(rnd)>>33%300) * time.Millisecond)
			ralph("pause", id)
			settled("pause", aiwg.StatusPaused)
			ralph("resume", id)
		}
		time.Sleep(time.Duration(uint64(rnd)>>33%300) * time.Millisecond)
		ralph("abort", id)
		settled("abort", aiwg.StatusAborted)
		st, _ := ws.ReadState(id)
		fmt.Fprintf(ts.Stdout(), "trials %d iterations %d interrupted %d\n", trials, st.Metrics.TotalIterations, len(st.Iterations)-st.Metrics.TotalIterations)
	},
	// startmany N ARGS...: run N `ralph ARGS...` at once; stdout gets how many exited 0.
	"startmany": func(ts *testscript.TestScript, neg bool, args []string) {
		n, _ := strconv.Atoi(args[0])
		exe, err := exec.LookPath("ralph")
		ts.Check(err)
		type res struct {
			code int
			out  string
		}
		ch := make(chan res, n)
		for i := 0; i < n; i++ {
			go func() {
				cmd := exec.Command(exe, args[1:]...)
				cmd.Dir = ts.MkAbs(".")
				cmd.Env = scriptEnv(ts)
				out, _ := cmd.CombinedOutput()
				ch <- res{cmd.ProcessState.ExitCode(), string(out)}
			}()
		}
		ok, refused := 0, 0
		for i := 0; i < n; i++ {
			r := <-ch
			switch {
			case r.code == 0:
				ok++
			case strings.Contains(r.out, "loops already active"):
				refused++
			default:
				ts.Logf("unexpected: exit %d: %s", r.code, r.out)
			}
		}
		fmt.Fprintf(ts.Stdout(), "started %d refused %d\n", ok, refused)
	},
}
