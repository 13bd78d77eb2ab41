package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/compattest"
	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/need"
	"github.com/agentfleet/fleet/internal/testenv/postmortem"
	"github.com/agentfleet/fleet/internal/testenv/sweep"
	"github.com/agentfleet/fleet/internal/tmux"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(sweep.Guard(m), map[string]func(){
		tool: func() { os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// testEnv gives every script a private tmux server (killed at the end), an agents config whose
// "fake" agent is testdata/agent.sh, and a git repository at $WORK/repo.
func testEnv() func(env *testscript.Env) error {
	return func(env *testscript.Env) error {
		agentPath, _ := filepath.Abs("testdata/agent.sh")
		// tmux socket paths must be short (about 100 bytes): $WORK is too deep.
		sockDir, err := os.MkdirTemp("", "dsp")
		if err != nil {
			return err
		}
		socket := filepath.Join(sockDir, "s")
		testenv.Mark(env)
		need.Setup(env)
		env.Defer(func() {
			testenv.KillServer(socket)
			os.RemoveAll(sockDir)
		})
		// A failed script shows its agents' logs, supervisors and panes before they go.
		env.Defer(func() { postmortem.OnFailure(env.T().(postmortem.TB), env.WorkDir, socket) })
		config := filepath.Join(env.WorkDir, "agents.json")
		cfg := fmt.Sprintf(`{"fake": {"command": %q, "default_model": "m1", "models": {"fast": "m1-fast"}},
		  "fake-arg": {"command": %q, "prompt": "arg"},
		  "claude": {"command": %q, "agent_mode": {"flags": ["-p"], "model_flag": "--model"}, "default_model": "opus"},
		  "codex": {"command": %q, "subcommand": "exec", "exec_mode": {"flags": ["exec", "--yolo"], "model_flag": "-m"},
		            "reasoning_effort": {"flag": "-c"}, "default_model": "gpt-5.3-codex"},
		  "repos": {%q: {"test_cmd": "test -f agent-wrote.txt", "timeout": 30}}}`,
			agentPath, agentPath, agentPath, agentPath, filepath.Join(env.WorkDir, "verified-repo"))
		if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
			return err
		}
		env.Setenv("CONFIG_FILE", config)
		env.Setenv("DISPATCH_TMUX_SOCKET", socket)
		env.Setenv("DISPATCH_KILL_GRACE", "1")
		env.Setenv("DISPATCH_MIN_FREE_MB", "1")
		env.Setenv("AGENT", agentPath)
		// Only the scripts that check records against the users' schemas need the corpus: they
		// skip those checks without it ([!compat] skip), the others run.
		compat, _ := compattest.Find()
		env.Setenv("COMPAT", compat)
		env.Setenv("HOME", env.WorkDir)
		// CRONPATH is a PATH as cron gives one, with the dispatch under test in front: scripts
		// run dispatch as cron does with env -i PATH=$CRONPATH. FLEET_BIN makes the workspace's
		// shims (links to this clone's scripts/) run the dispatch under test too: without it they
		// take this clone's bin/dispatch, which make build or make demo left, of another commit.
		for _, dir := range filepath.SplitList(env.Getenv("PATH")) {
			if _, err := os.Stat(filepath.Join(dir, tool)); err == nil {
				env.Setenv("CRONPATH", dir+":/usr/bin:/bin")
				env.Setenv("FLEET_BIN", dir)
				break
			}
		}
		for _, dir := range []string{"repo", "verified-repo"} {
			if err := gitRepo(filepath.Join(env.WorkDir, dir)); err != nil {
				return err
			}
		}
		return nil
	}
}

func gitRepo(dir string) error {
	for _, args := range [][]string{{"init", "-q", "-b", "main", dir}, {"-C", dir, "config", "user.email", "t@example.com"},
		{"-C", dir, "config", "user.name", "t"}, {"-C", dir, "commit", "-q", "--allow-empty", "-m", "init"}} {
		if _, err := gitx.Run(context.Background(), "", "", args...); err != nil {
			return err
		}
	}
	return nil
}

// scriptCmds are the test-only commands of the dispatch scripts.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"need": need.Cmd,
	// hidetmux: PATH becomes a directory holding dispatch, git and sh, but no tmux.
	"hidetmux": func(ts *testscript.TestScript, neg bool, args []string) {
		dir := ts.MkAbs("no-tmux-bin")
		ts.Check(os.MkdirAll(dir, 0o755))
		for _, name := range []string{"dispatch", "git", "sh"} {
			path, err := exec.LookPath(name)
			ts.Check(err)
			ts.Check(os.Symlink(path, filepath.Join(dir, name)))
		}
		ts.Setenv("PATH", dir)
	},
	// session NAME CMD [ARGS...]: a session NAME running CMD on the scripts' tmux server,
	// started as dispatch starts one (tmux.Client.NewSession): a server that is exiting because
	// the last agent's session just ended is waited out, where a bare 'tmux new-session' fails
	// with "server exited unexpectedly".
	"session": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: session NAME CMD [ARGS...]")
		}
		c := &tmux.Client{Socket: ts.Getenv("DISPATCH_TMUX_SOCKET")}
		_, err := c.NewSession(context.Background(), args[0], ts.MkAbs("."), nil, args[1:]...)
		ts.Check(err)
	},
	// waitstatus BEAD STATUS [SECONDS]: wait until the bead's result record has STATUS.
	"waitstatus": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: waitstatus BEAD STATUS [SECONDS]")
		}
		limit := 15 * time.Second
		if len(args) > 2 {
			n, _ := strconv.Atoi(args[2])
			limit = time.Duration(n) * time.Second
		}
		path := ts.MkAbs(filepath.Join("state", "results", args[0]+".json"))
		deadline := time.Now().Add(limit)
		var last string
		for time.Now().Before(deadline) {
			if r, err := record.ReadResult(path); err == nil {
				last = r.Status
				if r.Status == args[1] {
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		ts.Fatalf("%s: result status %q after %s, want %q", args[0], last, limit, args[1])
	},
	// validrecords [SCHEMADIR]: every run and result record in state/ satisfies its schema
	// (the embedded ones, or those of SCHEMADIR).
	"validrecords": func(ts *testscript.TestScript, neg bool, args []string) {
		dir := ""
		if len(args) > 0 {
			dir = ts.MkAbs(args[0])
		}
		n := 0
		for kind, sub := range map[string]string{"run": "runs", "result": "results"} {
			s, err := schema.Load(kind, dir)
			ts.Check(err)
			files, _ := filepath.Glob(ts.MkAbs(filepath.Join("state", sub, "*.json")))
			for _, f := range files {
				b, err := os.ReadFile(f)
				ts.Check(err)
				problems, err := s.Validate(b)
				if err != nil || len(problems) > 0 {
					ts.Fatalf("%s does not satisfy %s: %v %v\n%s", f, s.Source, problems, err, b)
				}
				n++
			}
		}
		if n == 0 {
			ts.Fatalf("no records in state/")
		}
	},
	// signal BEAD SIG: send SIG (KILL, TERM, HUP) to the bead's supervisor.
	"signal": func(ts *testscript.TestScript, neg bool, args []string) {
		e, err := supervise.Layout{Dir: ts.MkAbs("state")}.ReadEntry(args[0])
		ts.Check(err)
		if e == nil {
			ts.Fatalf("no supervisor entry for %s", args[0])
		}
		sig := map[string]syscall.Signal{"KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM, "HUP": syscall.SIGHUP}[args[1]]
		ts.Check(syscall.Kill(e.PID, sig))
		// Wait for it to be gone, so the script goes on from a known state.
		for i := 0; i < 200 && syscall.Kill(e.PID, 0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	},
	// agentgone BEAD: the agent process of the bead's last attempt no longer exists.
	"agentgone": func(ts *testscript.TestScript, neg bool, args []string) {
		b, err := os.ReadFile(ts.MkAbs(filepath.Join("state", "logs", args[0]+".log")))
		ts.Check(err)
		var pid int
		for _, line := range strings.Split(string(b), "\n") {
			if _, err := fmt.Sscanf(line, "agent: pid %d,", &pid); err == nil {
				break
			}
		}
		if pid == 0 {
			ts.Fatalf("no agent pid in the log")
		}
		for i := 0; i < 300; i++ {
			if syscall.Kill(pid, 0) != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		ts.Fatalf("agent pid %d is still alive", pid)
	},
}

func TestScripts(t *testing.T) {
	// Checked here, not in Setup: Setup runs in each script's goroutine, where skipping the
	// parent test panics.
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	_, errCompat := compattest.Find()
	testscript.Run(t, testscript.Params{
		Dir:   "testdata",
		Setup: testEnv(),
		Cmds:  scriptCmds,
		Condition: func(cond string) (bool, error) {
			if cond == "compat" {
				return errCompat == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}
