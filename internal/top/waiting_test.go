package top_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/top"
)

// TestBeadWaitingForInput: a dispatched bead whose agent (on a terminal, as dispatch runs it)
// asks and waits is marked as a worker is (and so are a queue's task and an AIWG loop whose
// agents ask: their attempts are beads under the same supervisor): its supervisor's control socket says since when
// (the same supervisor, internal/supervise/waiting.go), the row has WaitingInput and the
// ACTIVITY "input N", swarm top --once --json has "waiting_input"; a bead busy printing is
// never marked; answered, the mark goes.
func TestBeadWaitingForInput(t *testing.T) {
	if testing.Short() || swarmBin == "" {
		t.Skip("needs the swarm and dispatch binaries and real agents")
	}
	root := t.TempDir()
	stateDir := filepath.Join(root, "state")
	asker := filepath.Join(root, "asker.sh")
	script := "#!/bin/sh\n" +
		"case \"$1\" in\n" +
		"busy*) while :; do echo working \"$(date +%N)\" '>'; sleep 0.05; done ;;\n" +
		"*) printf 'Your name? '; read -r n; echo \"hello $n\"; exec sleep 600 ;;\n" +
		"esac\n"
	config := filepath.Join(root, "agents.json")
	for file, text := range map[string]string{asker: script,
		config: `{"asker": {"command": "` + asker + `", "prompt": "arg", "default_model": "m1"}}`} {
		if err := os.WriteFile(file, []byte(text), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "STATE_DIR="+stateDir, "CONFIG_FILE="+config, "DISPATCH_BACKEND=process",
		"DISPATCH_MIN_FREE_MB=1", "DISPATCH_KILL_GRACE=1", "SWARM_DIR="+filepath.Join(root, "swarm"))
	dispatch := filepath.Join(filepath.Dir(swarmBin), "dispatch")
	run := func(name string, args ...string) string {
		t.Helper()
		c := exec.Command(name, args...)
		c.Env, c.Dir = env, root
		out, err := testenv.CombinedOutput(c, testenv.CommandBound)
		if err != nil && args[0] != "kill" {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		run(dispatch, "kill", "bd-asks")
		run(dispatch, "kill", "bd-busy")
	})
	run(dispatch, "bd-asks", root, "asker", "ask")
	run(dispatch, "bd-busy", root, "asker", "busy")

	m, err := top.Open(top.Sources{StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	asks := waitRow(t, m, top.KindDispatch, "bd-asks", func(r *top.Row) bool { return r.Live && !r.WaitingInput.IsZero() })
	if words := asks.ActivityWords(time.Now()); !strings.HasPrefix(words, top.InputMark+" ") {
		t.Errorf("ACTIVITY of a bead waiting for input = %q, want %q and how long", words, top.InputMark)
	}
	// The busy one, printing lines that end as prompts do, is never marked (a few looks).
	for range 5 {
		rows, _ := m.Refresh(context.Background())
		i := slices.IndexFunc(rows, func(r *top.Row) bool { return r.Name == "bd-busy" })
		if i < 0 || !rows[i].Live || !rows[i].WaitingInput.IsZero() {
			t.Fatalf("the busy bead: %+v, want it live and not waiting", rows[min(i, 0)])
		}
		time.Sleep(300 * time.Millisecond)
	}

	out := run(swarmBin, "top", "--once", "--json", "--state-dir", stateDir, "--workspace", root)
	var rows []*top.Row
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	i := slices.IndexFunc(rows, func(r *top.Row) bool { return r.Name == "bd-asks" })
	if i < 0 || rows[i].WaitingInput.IsZero() || !strings.Contains(out, `"waiting_input": "`) {
		t.Errorf("swarm top --once --json lacks the bead's waiting_input:\n%s", out)
	}

	// A queue's task whose agent asks: its row is marked too (its attempt is a bead of the
	// state directory, under the same supervisor).
	if err := testenv.GitRepo(root); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(root, "asking.md")
	if err := os.WriteFile(plan, []byte("- [ ] t1: ask for a name\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ralph := filepath.Join(filepath.Dir(swarmBin), "ralph")
	run(ralph, "queue", "init", plan)
	queue := exec.Command(ralph, "queue", "run", "asking", "--agents", "1", "--agent", "asker")
	var queueOut strings.Builder
	queue.Env, queue.Dir, queue.Stdout, queue.Stderr = env, root, &queueOut, &queueOut
	if err := queue.Start(); err != nil {
		t.Fatal(err)
	}
	queueDone := make(chan error, 1)
	go func() { queueDone <- queue.Wait() }()
	t.Cleanup(func() {
		run(dispatch, "kill", "asking-t1")
		queue.Process.Kill()
		<-queueDone
	})
	mq, err := top.Open(top.Sources{StateDir: stateDir, Workspace: root})
	if err != nil {
		t.Fatal(err)
	}
	waitRow(t, mq, top.KindTask, "t1", func(r *top.Row) bool { return r.Live && !r.WaitingInput.IsZero() })

	// An AIWG loop whose iteration's agent asks: its row is marked too.
	out = run(ralph, "start", "Ask me", "--completion", "test -f done.txt", "--agent", "asker")
	loopID := regexp.MustCompile(`ralph-ask-me-[0-9a-f]{8}`).FindString(out)
	if loopID == "" {
		t.Fatalf("ralph start said no loop id:\n%s", out)
	}
	t.Cleanup(func() { run(ralph, "abort", loopID) })
	waitRow(t, mq, top.KindLoop, loopID, func(r *top.Row) bool { return r.Live && !r.WaitingInput.IsZero() })

	if err := m.Send(context.Background(), asks, "top"); err != nil {
		t.Fatal(err)
	}
	waitRow(t, m, top.KindDispatch, "bd-asks", func(r *top.Row) bool { return r.WaitingInput.IsZero() && r.LastLine == "hello top" })
}
