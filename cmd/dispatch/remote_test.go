package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/testenv/sshlab"
)

// remoteWorld is a test's lab of sshd hosts, each with a clone of the local repository, our
// dispatch built by the test (reached on the hosts at the same path: the namespaces share the
// file system) and a hosts.yaml naming them.
type remoteWorld struct {
	lab       *sshlab.Lab
	dir       string
	bin       string // the directory of the dispatch built for the test
	repo      string // the local repository (branch feature/x)
	state     string // the local state directory
	hostsFile string
	hostState []string // each host's state directory
	hostRepo  []string // each host's clone
}

const labVersion = "sshlab-test"

// buildDispatch builds this command at version into a directory of its own.
func buildDispatch(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-ldflags", "-X github.com/agentfleet/fleet/internal/cli.version="+version,
		"-o", filepath.Join(dir, "dispatch"), ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return dir
}

func newRemoteWorld(t *testing.T, hosts int) *remoteWorld {
	t.Helper()
	if testing.Short() {
		t.Skip("starts sshd hosts in network namespaces")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	lab := sshlab.New(t, hosts)
	w := &remoteWorld{lab: lab, dir: t.TempDir(), bin: buildDispatch(t, labVersion)}
	w.repo = filepath.Join(w.dir, "local")
	w.state = filepath.Join(w.dir, "state")
	if err := gitRepo(w.repo); err != nil {
		t.Fatal(err)
	}
	mustGit(t, w.repo, "branch", "feature/x")
	agentPath, _ := filepath.Abs("testdata/agent.sh")
	config := filepath.Join(w.dir, "agents.json")
	os.WriteFile(config, []byte(fmt.Sprintf(`{"fake": {"command": %q, "default_model": "m1"}}`, agentPath)), 0o644)
	var yaml strings.Builder
	yaml.WriteString("hosts:\n")
	for i, h := range lab.Hosts {
		hdir := filepath.Join(w.dir, h.Name)
		clone := filepath.Join(hdir, "repo")
		if _, err := gitx.Run(context.Background(), "", "", "clone", "-q", w.repo, clone); err != nil {
			t.Fatal(err)
		}
		// tmux's socket path must be short: $TMPDIR/t<pid>-<i>, removed with the host.
		sock := filepath.Join(os.TempDir(), fmt.Sprintf("fl%d-%d.tmux", os.Getpid(), i))
		t.Cleanup(func() { os.Remove(sock) })
		w.hostRepo = append(w.hostRepo, clone)
		w.hostState = append(w.hostState, filepath.Join(hdir, "state"))
		fmt.Fprintf(&yaml, "  - name: %s\n    ssh: %s\n    identity: %s\n    known_hosts: %s\n    repo: %s\n"+
			"    agents_config: %s\n    bin: %s\n    state_dir: %s\n"+
			"    env: {DISPATCH_TMUX_SOCKET: %s, DISPATCH_KILL_GRACE: '1', DISPATCH_MIN_FREE_MB: '1'}\n",
			h.Name, h.Dest, lab.Key, lab.KnownHosts, clone, config, w.bin, w.hostState[i], sock)
	}
	w.hostsFile = filepath.Join(w.dir, "hosts.yaml")
	os.WriteFile(w.hostsFile, []byte(yaml.String()), 0o644)
	return w
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitx.Cmd{Dir: dir}.Output(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dispatch runs the built dispatch here with args and env, and returns its exit code and
// output.
func (w *remoteWorld) dispatch(ctx context.Context, env []string, args ...string) (int, string, string) {
	cmd := exec.CommandContext(ctx, filepath.Join(w.bin, "dispatch"), args...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return code, stdout.String(), stderr.String()
}

// TestDispatchHost: dispatch --host runs the agent on the host, in its clone of the pushed
// branch; the records come back into the local state directory and satisfy their schemas; the
// agent's commit comes back as refs/remotes/h1/feature/x.
func TestDispatchHost(t *testing.T) {
	w := newRemoteWorld(t, 1)
	code, stdout, stderr := w.dispatch(context.Background(), nil, "--host", "h1", "--hosts", w.hostsFile, "--state-dir", w.state,
		"--branch", "feature/x", "bd-r1", w.repo, "fake", "SAY=far WRITE=remote.txt COMMIT=agent-work")
	if code != 0 {
		t.Fatalf("dispatch --host: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"Host: h1 (", "Starting agent session: agent-bd-r1", "bd-r1: done (exit 0, reason agent-exit-0, attempt 1/2",
		"Branch: h1's feature/x fetched as refs/remotes/h1/feature/x"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// The agent ran there: in the host's clone, on the branch.
	if _, err := os.Stat(filepath.Join(w.hostRepo[0], "remote.txt")); err != nil {
		t.Errorf("the agent's file is not in the host's clone: %v", err)
	}
	if got := mustGit(t, w.repo, "log", "-1", "--format=%s", "refs/remotes/h1/feature/x"); got != "agent-work" {
		t.Errorf("refs/remotes/h1/feature/x is at %q, want the agent's commit", got)
	}
	// The records came back and are valid.
	store := record.Store{Dir: w.state}
	for kind, path := range map[string]string{"run": store.RunPath("bd-r1"), "result": store.ResultPath("bd-r1")} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s record not brought back: %v", kind, err)
		}
		s, err := schema.Load(kind, "")
		if err != nil {
			t.Fatal(err)
		}
		if problems, err := s.Validate(b); err != nil || len(problems) > 0 {
			t.Errorf("%s record does not satisfy its schema: %v %v\n%s", kind, problems, err, b)
		}
	}
	res, err := record.ReadResult(store.ResultPath("bd-r1"))
	if err != nil || res.Status != record.StatusDone {
		t.Errorf("local result = %+v, %v; want done", res, err)
	}
	run, _ := record.ReadRun(store.RunPath("bd-r1"))
	if run == nil || run.Repo != w.hostRepo[0] || run.ResultFile != store.ResultPath("bd-r1") {
		t.Errorf("local run = %+v; want the host's repo and the local result_file", run)
	}
}

// TestDispatchHostOffline: a host cut off while its agent works is reported offline within
// DISPATCH_HOST_OFFLINE (plus a read's set-up), exit 1, in one line.
func TestDispatchHostOffline(t *testing.T) {
	w := newRemoteWorld(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type outcome struct {
		code           int
		stdout, stderr string
		at             time.Time
	}
	done := make(chan outcome, 1)
	go func() {
		code, stdout, stderr := w.dispatch(ctx, []string{"DISPATCH_HOST_OFFLINE=3"}, "--host", "h1", "--hosts", w.hostsFile,
			"--state-dir", w.state, "--branch", "feature/x", "bd-off", w.repo, "fake", "HANG")
		done <- outcome{code, stdout, stderr, time.Now()}
	}()
	// The agent runs there once the host's result record says running.
	hostResult := record.Store{Dir: w.hostState[0]}.ResultPath("bd-off")
	for {
		if r, err := record.ReadResult(hostResult); err == nil && r.Status == record.StatusRunning {
			break
		}
		select {
		case o := <-done:
			t.Fatalf("dispatch --host ended before its agent ran: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	// While it runs there, a second dispatch --host of the bead from this state directory is
	// refused at once: the bead's agent never runs twice.
	code, _, stderr := w.dispatch(ctx, nil, "--host", "h1", "--hosts", w.hostsFile, "--state-dir", w.state,
		"--branch", "feature/x", "--force", "bd-off", w.repo, "fake", "SAY=twice")
	if code != 1 || !strings.Contains(stderr, "bd-off is being dispatched from this state directory") {
		t.Errorf("a second dispatch --host of a running bead: exit %d, %q; want 1, refused", code, stderr)
	}
	w.lab.Cut(t, 0)
	cut := time.Now()
	o := <-done
	// The host's dispatch's own lines (INFO: ...) come first; ours is one line.
	if o.code != 1 || !strings.Contains(o.stderr, "dispatch: host h1 is offline") || strings.Count(o.stderr, "dispatch: ") != 1 {
		t.Fatalf("dispatch --host of a host cut off: exit %d, stderr %q; want 1 and one line: offline", o.code, o.stderr)
	}
	if took := o.at.Sub(cut); took > 15*time.Second {
		t.Errorf("offline reported %s after the cut, want within 3 s and a read's set-up", took)
	}
	if _, err := os.Stat(record.Store{Dir: w.state}.ResultPath("bd-off")); err == nil {
		t.Errorf("a result record came back from a host that was cut off")
	}
}

// TestDispatchHostBadInput: a bad hosts.yaml, an unknown host, a host cut off at the start and
// a host without our binary at this version: one line saying what to do, exit 2.
func TestDispatchHostBadInput(t *testing.T) {
	w := newRemoteWorld(t, 2)
	ctx := context.Background()
	bad := filepath.Join(w.dir, "bad.yaml")
	os.WriteFile(bad, []byte("hosts:\n  - name: a\n    ssh: x\n    repo: relative\n"), 0o644)
	otherBin := buildDispatch(t, "other-version")
	hosts, _ := os.ReadFile(w.hostsFile)
	mismatch := filepath.Join(w.dir, "mismatch.yaml")
	os.WriteFile(mismatch, bytes.ReplaceAll(hosts, []byte("bin: "+w.bin), []byte("bin: "+otherBin)), 0o644)
	missing := filepath.Join(w.dir, "missing.yaml")
	os.WriteFile(missing, bytes.ReplaceAll(hosts, []byte("bin: "+w.bin), []byte("bin: "+t.TempDir())), 0o644)
	w.lab.Cut(t, 1)
	for _, tc := range []struct {
		name, hosts, host, want string
	}{
		{"bad hosts.yaml", bad, "a", "bad.yaml:4: host \"a\": repo \"relative\" must be an absolute path"},
		{"no hosts.yaml", filepath.Join(w.dir, "none.yaml"), "a", "reading hosts file"},
		{"unknown host", w.hostsFile, "h9", "no host \"h9\"; the hosts are h1, h2"},
		{"unreachable host", w.hostsFile, "h2", "host unreachable: host h2"},
		{"another version", mismatch, "h1", "runs \"dispatch version other-version\", this machine \"dispatch version " + labVersion + "\""},
		{"no binary", missing, "h1", "host h1 has no dispatch"},
	} {
		start := time.Now()
		code, stdout, stderr := w.dispatch(ctx, []string{"DISPATCH_HOST_OFFLINE=4"}, "--host", tc.host, "--hosts", tc.hosts,
			"--state-dir", w.state, "--branch", "feature/x", "bd-bad", w.repo, "fake", "SAY=x")
		line := strings.TrimSpace(stderr)
		if code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line holding %q (stdout %q)", tc.name, code, stderr, tc.want, stdout)
		}
		if time.Since(start) > 20*time.Second {
			t.Errorf("%s: took %s", tc.name, time.Since(start))
		}
	}
	if _, err := os.Stat(filepath.Join(w.state, "runs")); err == nil {
		t.Errorf("a refused dispatch --host left records")
	}
}

// TestDispatchHostTextPrintable: a hostile host's dispatch prints terminal control sequences on
// its stdout and stderr (retitle the terminal, clear it, write the clipboard) and its records'
// reason holds them; dispatch --host prints its lines and the outcome line without any of
// them, the text kept.
func TestDispatchHostTextPrintable(t *testing.T) {
	w := newRemoteWorld(t, 1)
	// The host runs a wrapper of its own binary (hosts.yaml's bin); here the test's runs.
	hostBin := t.TempDir()
	real := filepath.Join(w.bin, "dispatch")
	wrapper := fmt.Sprintf(`#!/bin/sh
case " $* " in
*" __records "*) %[1]q "$@" | sed 's/"reason":"/"reason":"\\u001b]0;retitled\\u0007\\u001b[2Jcleared /'; exit 0 ;;
*" version "*) exec %[1]q "$@" ;;
esac
printf 'hello \033]0;retitled\007\033[2Jfrom the host\n'
printf 'launching \033]52;c;Y2xpcA==\007now\n' >&2
exec %[1]q "$@"
`, real)
	if err := os.WriteFile(filepath.Join(hostBin, "dispatch"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	hosts, _ := os.ReadFile(w.hostsFile)
	hostile := filepath.Join(w.dir, "hostile.yaml")
	os.WriteFile(hostile, bytes.ReplaceAll(hosts, []byte("bin: "+w.bin), []byte("bin: "+hostBin)), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, stdout, stderr := w.dispatch(ctx, nil, "--host", "h1", "--hosts", hostile, "--state-dir", w.state,
		"--branch", "feature/x", "bd-esc", w.repo, "fake", "SAY=far")
	if code != 0 {
		t.Fatalf("dispatch --host: exit %d\nstdout:\n%q\nstderr:\n%q", code, stdout, stderr)
	}
	for name, text := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if strings.ContainsAny(text, "\x1b\x07") {
			t.Errorf("dispatch --host's %s holds the host's control sequences:\n%q", name, text)
		}
	}
	for _, want := range []string{"hello from the host", "bd-esc: done (exit 0, reason cleared agent-exit-0"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q (made printable):\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "launching now") {
		t.Errorf("stderr lacks the host's line %q (made printable):\n%s", "launching now", stderr)
	}
}
