package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/supervise"
)

// The hostile tests (issue 9, "the state directory is not trusted"): each plants in a state
// directory what another user, a crashed older version or a misbehaving agent could leave there
// (links, FIFOs, foreign directories, leftovers) and runs the real dispatch against it, with a
// private tmux server, as the fault tests do.

// hostileAgentScript is the stand-in agent of the hostile tests. Like testdata/agent.sh it takes
// its orders from the first line of its prompt:
//
//	LINK_LOG     replace its own log (state/logs/<bead>.log) with a link to $HOSTILE_VICTIM
//	DAEMON       start a daemon in a session of its own (setsid) that ignores SIGTERM, with a
//	             child that ignores it too; the daemon's pid goes to $HOSTILE_DIR/<bead>.daemon
//	WAITFOR=<f>  wait until $HOSTILE_DIR/<f> exists
//	HANG         sleep until killed               EXIT=<n>  exit with n (default 0)
const hostileAgentScript = `#!/usr/bin/env bash
prompt=""
[ -t 0 ] || prompt="$(cat)"
[ -n "$prompt" ] || prompt="${*: -1}"
orders="$(head -n1 <<<"$prompt")"
word() { grep -o "$1=[^ ]*" <<<"$orders" | head -n1 | cut -d= -f2-; }
has() { grep -qw "$1" <<<"$orders"; }
echo "agent: pid $$, prompt of ${#prompt} bytes"
if has LINK_LOG; then
  ln -sfn "$HOSTILE_VICTIM" "$HOSTILE_STATE/logs/$DISPATCH_BEAD.log"
  echo "agent: my log is now a link"
fi
if has DAEMON; then
  pidfile="$HOSTILE_DIR/$DISPATCH_BEAD.daemon"
  setsid sh -c 'trap "" TERM; sleep 100000 & echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; wait' "$pidfile" </dev/null >/dev/null 2>&1 &
  while [ ! -s "$pidfile" ]; do sleep 0.02; done
  echo "agent: daemon $(cat "$pidfile") started"
fi
if [ -n "$(word WAITFOR)" ]; then
  while [ ! -e "$HOSTILE_DIR/$(word WAITFOR)" ]; do sleep 0.02; done
fi
if has HANG; then
  while :; do sleep 1; done
fi
echo "agent: bye"
code="$(word EXIT)"
exit "${code:-0}"
`

// hostile is a fleet with the hostile agent beside the fake one: "hostile" (prompt on stdin)
// and "filer" (prompt in a file, state/prompts/<bead>.txt). dir is a directory outside the
// state directory for victims, pid files and signals to the agent.
type hostile struct {
	*fleet
	dir string
	env []string // CONFIG_FILE and HOSTILE_* for every dispatch
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	f := newFleet(t, "", "")
	h := &hostile{fleet: f, dir: t.TempDir()}
	agent := filepath.Join(h.dir, "hostile-agent.sh")
	if err := os.WriteFile(agent, []byte(hostileAgentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	fake, _ := filepath.Abs("testdata/agent.sh")
	cfg := fmt.Sprintf(`{"fake": {"command": %q, "default_model": "m1"},
	  "hostile": {"command": %q, "default_model": "m1"},
	  "filer": {"command": %q, "default_model": "m1", "prompt": "file", "prompt_flag": "--prompt-file"}}`, fake, agent, agent)
	config := filepath.Join(h.dir, "agents.json")
	if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h.env = []string{"CONFIG_FILE=" + config, "HOSTILE_DIR=" + h.dir, "HOSTILE_STATE=" + f.state}
	return h
}

// run is dispatch args... with the hostile settings and extra variables, to its end, within a
// minute: a dispatch that hangs is killed and fails the test.
func (h *hostile) run(t testing.TB, extraEnv []string, args ...string) (int, string, string) {
	t.Helper()
	r := h.runFull(t, extraEnv, args...)
	return r.code, r.stdout, r.stderr
}

// ran is how a dispatch ended.
type ran struct {
	code           int
	stdout, stderr string
	maxRSS         int64 // bytes
}

func (h *hostile) runFull(t testing.TB, extraEnv []string, args ...string) ran {
	t.Helper()
	cmd := h.command(append(append([]string(nil), h.env...), extraEnv...), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("dispatch %s hangs (killed after a minute)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), &stdout, &stderr)
	}
	r := ran{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("dispatch %v: %v", args, err)
		}
		r.code = ee.ExitCode()
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss << 10
	}
	return r
}

// must is run, failing the test unless dispatch exits 0.
func (h *hostile) must(t testing.TB, extraEnv []string, args ...string) string {
	t.Helper()
	code, stdout, stderr := h.run(t, extraEnv, args...)
	if code != 0 {
		t.Fatalf("dispatch %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// state is a path in the state directory.
func (h *hostile) statePath(elem ...string) string {
	return filepath.Join(append([]string{h.state}, elem...)...)
}

// victim is a file outside the state directory that a link planted in it points to: nothing
// the tools do may change it.
type victim struct {
	path    string
	content string
	mode    os.FileMode
}

func (h *hostile) victim(t *testing.T, name string) *victim {
	t.Helper()
	v := &victim{path: filepath.Join(h.dir, name), content: "precious " + name + "\n", mode: 0o644}
	if err := os.WriteFile(v.path, []byte(v.content), v.mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(v.path, v.mode) // whatever the umask
	return v
}

// intact fails the test if the victim changed.
func (v *victim) intact(t *testing.T) {
	t.Helper()
	fi, err := os.Lstat(v.path)
	if err != nil {
		t.Errorf("victim %s: %v", v.path, err)
		return
	}
	b, _ := os.ReadFile(v.path)
	if string(b) != v.content || fi.Mode() != v.mode {
		t.Errorf("victim %s was written through a link: mode %v, content %q; want %v, %q", v.path, fi.Mode(), b, v.mode, v.content)
	}
}

// plantLink puts a symbolic link to target at path, in place of whatever is there.
func plantLink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// plantFIFO puts a named pipe (with no writer and no reader) at path.
func plantFIFO(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// regular fails the test unless path is a regular file (not a link) of mode perm.
func regular(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != perm {
		t.Errorf("%s is %v, want a regular file %v", path, fi.Mode(), perm)
	}
}

// nobody is the unprivileged user the tests act as where permissions matter (they run as
// root here); the test is skipped when it cannot act as nobody.
const nobodyID = 65534

// asNobody runs argv as uid and gid nobody and fails the test if it fails.
func asNobody(t *testing.T, argv ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("acting as user nobody needs root")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %v: %v\n%s", argv, err, out)
	}
}

// openUp lets user nobody reach dir: the test's temporary directories are 0700.
func openUp(t *testing.T, dir string) {
	t.Helper()
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// killSupervisor SIGKILLs bead's supervisor and waits until it is gone.
func (h *hostile) killSupervisor(t *testing.T, bead string) {
	t.Helper()
	e, err := h.layout().ReadEntry(bead)
	if err != nil || e == nil || e.PID == 0 {
		t.Fatalf("no live supervisor entry for %s: %+v, %v", bead, e, err)
	}
	syscall.Kill(e.PID, syscall.SIGKILL)
	deadline := time.Now().Add(time.Minute)
	for supervise.SupervisorAlive(e.PID, bead) {
		if time.Now().After(deadline) {
			t.Fatalf("supervisor %d of %s survived SIGKILL", e.PID, bead)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGoneEntry waits until bead's registry entry is gone (its supervisor removes it just after
// the final records).
func (h *hostile) waitGoneEntry(t *testing.T, bead string) {
	t.Helper()
	path := h.layout().EntryPath(bead)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Lstat(path); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
