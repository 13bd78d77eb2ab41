package workspace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// script writes an executable shell script at dir/name and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// logger is a script body that appends "<name> <arg>…" to log and exits with code.
func logger(log string, code int) string {
	return "#!/bin/sh\n{ printf '%s' \"$(basename \"$0\")\"; for a in \"$@\"; do printf ' <%s>' \"$a\"; done; echo; } >>" +
		log + "\necho out; echo err >&2\nexit " + strconv.Itoa(code) + "\n"
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	if w, err := Open(""); w != nil || err != nil {
		t.Errorf(`Open("") = %v, %v, want nil, nil`, w, err)
	}
	if w, err := Open(file); err == nil {
		t.Errorf("Open(%q) = %v, want an error", file, w)
	}
	if w, err := Open(filepath.Join(dir, "nope")); err == nil {
		t.Errorf("Open(missing) = %v, want an error", w)
	}
	w, err := Open(dir)
	if err != nil || w.Root != dir {
		t.Errorf("Open(%q) = %v, %v", dir, w, err)
	}
}

func TestHook(t *testing.T) {
	w := &Workspace{Root: t.TempDir()}
	exe := script(t, w.Root, "scripts/"+ScriptVerify, "#!/bin/sh\n")
	script(t, w.Root, "scripts/"+ScriptWake, "#!/bin/sh\n")
	os.Chmod(w.Script(ScriptWake), 0o644)
	os.MkdirAll(w.Script(ScriptPRDLint), 0o755) // a directory: test -x says yes, exec says no
	for _, tc := range []struct {
		w    *Workspace
		name string
		want string
	}{
		{w, ScriptVerify, exe},
		{w, ScriptWake, ""},
		{w, ScriptPRDLint, ""},
		{w, ScriptPreflight, ""},
		{nil, ScriptVerify, ""},
	} {
		if got := tc.w.Hook(tc.name); got != tc.want {
			t.Errorf("Hook(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestInstruction(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{}, DefaultInstruction},
		{Config{Owner: "Perttu"}, "message Perttu with the result summary"},
		{Config{Owner: "Perttu", WakeInstruction: "ping #ops"}, "ping #ops"},
	} {
		if got := tc.c.Instruction(); got != tc.want {
			t.Errorf("%+v.Instruction() = %q, want %q", tc.c, got, tc.want)
		}
	}
}

// TestOwnerFromUserMD (issue 17): a workspace whose config has no "workspace" object (kept as
// it was, as the README's adoption steps say) still wakes its orchestrator with dispatch.sh's
// sentence naming its person, whom the workspace names in USER.md, as athena's does.
func TestOwnerFromUserMD(t *testing.T) {
	athena := "# USER.md - About Your Human\n\n- **Name:** Perttu Landström\n- **What to call them:** Perttu\n- **Pronouns:** he/him\n"
	for _, tc := range []struct {
		name, doc string
		cfg       Config
		want      string
	}{
		{"athena's", athena, Config{}, "message Perttu with the result summary"},
		{"name only", "- **Name:** Ada\n", Config{}, "message Ada with the result summary"},
		{"template blank", "- **Name:**\n- **What to call them:**\n- **Pronouns:** _(optional)_\n", Config{}, DefaultInstruction},
		{"placeholder", "- **Name:** _(fill in)_\n", Config{}, DefaultInstruction},
		{"no file", "", Config{}, DefaultInstruction},
		{"config owner first", athena, Config{Owner: "Ops"}, "message Ops with the result summary"},
		{"config instruction first", athena, Config{WakeInstruction: "tell ops"}, "tell ops"},
	} {
		root := t.TempDir()
		if tc.doc != "" {
			os.WriteFile(filepath.Join(root, "USER.md"), []byte(tc.doc), 0o644)
		}
		if got := tc.cfg.InstructionIn(&Workspace{Root: root}); got != tc.want {
			t.Errorf("%s: InstructionIn = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := (Config{}).InstructionIn(nil); got != DefaultInstruction {
		t.Errorf("no workspace: InstructionIn = %q, want %q", got, DefaultInstruction)
	}
	// A FIFO as USER.md hangs nothing.
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "USER.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := (&Workspace{Root: root}).Owner(); got != "" {
		t.Errorf("Owner with a FIFO as USER.md = %q", got)
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, doc string
		want      Config
		err       bool
	}{
		{"missing", "", Config{}, false},
		{"none", `{"claude": {"command": "claude"}}`, Config{}, false},
		{"owner", `{"claude": {}, "workspace": {"owner": "Perttu"}}`, Config{Owner: "Perttu"}, false},
		{"instruction", `{"workspace": {"wake_instruction": "tell ops"}}`, Config{WakeInstruction: "tell ops"}, false},
		{"broken", `{"workspace": `, Config{}, true},
		{"not an object", `{"workspace": "Perttu"}`, Config{}, true},
	} {
		path := filepath.Join(dir, tc.name+".json")
		if tc.doc != "" {
			os.WriteFile(path, []byte(tc.doc), 0o644)
		}
		got, err := ReadConfig(path)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ReadConfig(%s) = %+v, %v, want %+v (error: %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestMessages(t *testing.T) {
	o := Outcome{Bead: "bd-1", Agent: "claude", Model: "sonnet", Status: "done", Reason: "agent-exit-0",
		Duration: 42, Attempt: 1, MaxRetries: 2}
	if got, want := MemoryLine(o), "- Bead `bd-1`: agent=claude model=sonnet attempt=1/2 status=done duration=42s reason=agent-exit-0\n"; got != want {
		t.Errorf("MemoryLine = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		findings    int
		instruction string
		want        string
	}{
		{0, "message Perttu with the result summary",
			"Agent bd-1 done (42s, claude/sonnet, attempt 1/2, reason: agent-exit-0). Check state/results/bd-1.json and message Perttu with the result summary."},
		{3, "",
			"Agent bd-1 done (42s, claude/sonnet, attempt 1/2, reason: agent-exit-0, truthsayer: 3 issues). Check state/results/bd-1.json and report the result summary."},
	} {
		if got := WakeMessage(o, tc.findings, tc.instruction); got != tc.want {
			t.Errorf("WakeMessage(%d, %q) = %q, want %q", tc.findings, tc.instruction, got, tc.want)
		}
	}
	res := &record.Result{Bead: "bd-2", Agent: "codex", Status: "failed", Reason: "max-retries-reached",
		DurationSeconds: record.Int(0), Attempt: 2, MaxRetries: 2}
	want := Outcome{Bead: "bd-2", Agent: "codex", Model: "fast", Status: "failed", Reason: "max-retries-reached", Attempt: 2, MaxRetries: 2}
	if got := OutcomeOf(res, "fast"); got != want {
		t.Errorf("OutcomeOf = %+v, want %+v", got, want)
	}
}

func TestAppendMemory(t *testing.T) {
	w := &Workspace{Root: t.TempDir()}
	// 23:30 in UTC-2 is the next day in UTC: the file is the UTC day's, as date -u made it.
	now := time.Date(2026, 2, 9, 23, 30, 0, 0, time.FixedZone("x", -2*3600))
	if err := w.AppendMemory(now, "- one\n"); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendMemory(now, "- two\n"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(w.Root, "memory", "2026-02-10.md")
	if got, want := readFile(t, path), "# 2026-02-10\n\n- one\n- two\n"; got != want {
		t.Errorf("memory file = %q, want %q", got, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("memory file mode = %v, want 0644", fi.Mode().Perm())
	}

	// Supervisors finishing at once: one header, every line whole.
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.AppendMemory(day, "- a line that is long enough to be torn if writes interleaved\n"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got := readFile(t, w.Memory(day))
	if strings.Count(got, "# 2026-03-01\n\n") != 1 || !strings.HasPrefix(got, "# 2026-03-01\n\n") ||
		strings.Count(got, "- a line that is long enough to be torn if writes interleaved\n") != 20 {
		t.Errorf("memory file after concurrent appends:\n%s", got)
	}
	if names, _ := filepath.Glob(filepath.Join(w.Root, "memory", ".*")); len(names) > 0 {
		t.Errorf("temp files left: %v", names)
	}

	// memory/ that cannot be a directory: an error, for the caller to report.
	bad := &Workspace{Root: t.TempDir()}
	os.WriteFile(filepath.Join(bad.Root, "memory"), nil, 0o644)
	if err := bad.AppendMemory(day, "- x\n"); err == nil {
		t.Error("AppendMemory with memory/ a file: no error")
	}
}

func TestParseVerify(t *testing.T) {
	// verify.sh's output as it prints it (jq -n).
	full := `{
  "repo": "/r", "bead": "bd-1",
  "checks": {"lint": "fail", "tests": "pass", "ubs": "issues", "truthsayer": "fail", "prd_governance": "pass",
             "truthsayer_errors": 2, "truthsayer_warnings": 0,
             "lint_details": [{"file": "a.go", "rule": "x"}], "prd_governance_details": null},
  "overall": "fail"
}`
	for _, tc := range []struct {
		name, doc string
		want      *record.Verification
		err       bool
	}{
		{"full", full, &record.Verification{Lint: "fail", Tests: "pass", UBS: "issues",
			LintDetails: []byte(`[{"file": "a.go", "rule": "x"}]`), Overall: "fail"}, false},
		{"tests timeout is a failure", `{"checks": {"tests": "timeout", "lint": "skipped", "ubs": "skipped", "lint_details": null}, "overall": "fail"}`,
			&record.Verification{Lint: "skipped", Tests: "fail", UBS: "skipped", Overall: "fail"}, false},
		{"values the schema refuses are left out", `{"checks": {"lint": "maybe", "ubs": "pass", "lint_details": {"a": 1}}, "overall": "unknown"}`,
			&record.Verification{}, false},
		{"no checks: null, as jq .checks made it", `{"overall": "pass"}`, nil, false},
		{"not JSON", "tests passed\n", nil, true},
	} {
		got, err := ParseVerify([]byte(tc.doc))
		if (err != nil) != tc.err {
			t.Errorf("ParseVerify(%s): error %v, want error: %v", tc.name, err, tc.err)
			continue
		}
		if !sameVerification(got, tc.want) {
			t.Errorf("ParseVerify(%s) = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func sameVerification(a, b *record.Verification) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Lint == b.Lint && a.Tests == b.Tests && a.UBS == b.UBS && a.Overall == b.Overall &&
		bytes.Equal(a.LintDetails, b.LintDetails)
}

func TestCommandRun(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"ok", "#!/bin/sh\nexit 0\n", 0},
		{"exit-3", "#!/bin/sh\nexit 3\n", 3},
		{"killed", "#!/bin/sh\nkill -TERM $$\n", 128 + int(syscall.SIGTERM)},
		// No #! line: run by the shell, as bash and execvp do.
		{"no-shebang", "exit 5\n", 5},
	} {
		c := Command{Path: script(t, dir, tc.name, tc.body)}
		if got, err := c.Run(ctx); got != tc.want || err != nil {
			t.Errorf("Run(%s) = %d, %v, want %d", tc.name, got, err, tc.want)
		}
	}

	// Arguments are an argv: nothing in them is run by a shell.
	var out bytes.Buffer
	arg := `$(touch pwned); echo "x" > pwned2 ` + "`id`"
	c := Command{Path: script(t, dir, "echo", "#!/bin/sh\nprintf '%s|' \"$@\"\n"), Args: []string{arg, ""}, Dir: dir, Stdout: &out}
	if _, err := c.Run(ctx); err != nil || out.String() != arg+"||" {
		t.Errorf("Run(echo %q) printed %q, %v", arg, out.String(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("an argument was run by a shell")
	}

	// A hook that hangs is killed at its time limit, with what it started.
	pidFile := filepath.Join(dir, "child.pid")
	c = Command{Path: script(t, dir, "hang", "#!/bin/sh\nsleep 30 &\necho $! >"+pidFile+"\nwait\n"), Timeout: 300 * time.Millisecond}
	start := time.Now()
	if _, err := c.Run(ctx); !errors.Is(err, ErrTimeout) {
		t.Errorf("Run(hang) = %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run(hang) took %s", d)
	}
	// The child was sent SIGKILL with its group: it dies once it is scheduled (soon, or later
	// on a loaded machine).
	pid, _ := strconv.Atoi(strings.TrimSpace(readFileOr(pidFile)))
	for deadline := time.Now().Add(10 * time.Second); pid > 0 && syscall.Kill(pid, 0) == nil && !zombie(pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if pid > 0 && syscall.Kill(pid, 0) == nil && !zombie(pid) {
		t.Errorf("the hook's child %d outlived its time limit", pid)
	}

	// A command that cannot be run at all is an error, not an exit status.
	c = Command{Path: filepath.Join(dir, "missing")}
	if code, err := c.Run(ctx); err == nil {
		t.Errorf("Run(missing) = %d, nil, want an error", code)
	}
}

// zombie reports whether pid has ended but is not reaped yet (its parent, here, is init).
func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

func TestBeforeLaunch(t *testing.T) {
	ctx := context.Background()
	w := &Workspace{Root: t.TempDir()}
	log := filepath.Join(w.Root, "hooks.log")
	setup := func(codes map[string]int) {
		os.Remove(log)
		for _, name := range []string{ScriptLintHidden, ScriptPreflight, ScriptPRDLint} {
			script(t, w.Root, "scripts/"+name, logger(log, codes[name]))
		}
	}
	launch := func(enforce bool) (error, string, string) {
		var stdout, stderr bytes.Buffer
		err := w.BeforeLaunch(ctx, Launch{Agent: "claude", Repo: "/r e/p", EnforcePRDLint: enforce, Stdout: &stdout, Stderr: &stderr})
		return err, stdout.String(), stderr.String()
	}

	setup(nil)
	err, stdout, stderr := launch(true)
	if err != nil {
		t.Fatalf("BeforeLaunch: %v", err)
	}
	if got, want := readFile(t, log), "lint-no-hidden-workspace.sh\nagent-preflight.sh <claude> </r e/p>\nprd-lint.sh\n"; got != want {
		t.Errorf("scripts run:\n%s\nwant:\n%s", got, want)
	}
	// The lint's and the preflight's output is the caller's; prd-lint's report is kept.
	if stdout != "out\nout\n" || stderr != "err\nerr\nerr\n" {
		t.Errorf("output: stdout %q, stderr %q", stdout, stderr)
	}

	for _, tc := range []struct {
		codes   map[string]int
		enforce bool
		code    int
		msg     string
		ran     string
	}{
		{map[string]int{ScriptPreflight: 3}, true, 3, "launch refused by " + w.Script(ScriptPreflight) + " (exit 3)",
			"lint-no-hidden-workspace.sh\nagent-preflight.sh <claude> </r e/p>\n"},
		{map[string]int{ScriptLintHidden: 2, ScriptPreflight: 3}, true, 2, "launch refused by " + w.Script(ScriptLintHidden) + " (exit 2)",
			"lint-no-hidden-workspace.sh\n"},
		{map[string]int{ScriptPRDLint: 4}, true, 1, "PRD governance check failed. Dispatch blocked.\nout", ""},
		{map[string]int{ScriptPRDLint: 4}, false, 0, "", "lint-no-hidden-workspace.sh\nagent-preflight.sh <claude> </r e/p>\n"},
	} {
		setup(tc.codes)
		err, _, _ := launch(tc.enforce)
		var r *Refusal
		switch {
		case tc.code == 0 && err != nil:
			t.Errorf("%v (enforce %v): %v, want none", tc.codes, tc.enforce, err)
		case tc.code != 0 && (!errors.As(err, &r) || r.Code != tc.code || err.Error() != tc.msg):
			t.Errorf("%v: %v (%+v), want a refusal with code %d: %q", tc.codes, err, r, tc.code, tc.msg)
		}
		if tc.ran != "" {
			if got := readFile(t, log); got != tc.ran {
				t.Errorf("%v: scripts run:\n%s\nwant:\n%s", tc.codes, got, tc.ran)
			}
		}
	}

	// No workspace: nothing to run.
	var none *Workspace
	if err := none.BeforeLaunch(ctx, Launch{}); err != nil {
		t.Errorf("nil.BeforeLaunch = %v", err)
	}
}

func TestEnforcePRDLint(t *testing.T) {
	for v, want := range map[string]bool{"": true, "true": true, "false": false, "1": false, "TRUE": false} {
		if got := EnforcePRDLint(func(string) string { return v }); got != want {
			t.Errorf("EnforcePRDLint(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestHooksAfterRecords(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	log := filepath.Join(root, "hooks.log")
	script(t, root, "scripts/"+ScriptValidateState, logger(log, 1))
	script(t, root, "scripts/"+ScriptWake, logger(log, 1))
	h := &Hooks{Root: root, Instruction: "message Perttu with the result summary"}
	var console bytes.Buffer
	h.Validate(ctx, "/s/runs/bd-1.json", "/s/results/bd-1.json", nil, &console)
	o := Outcome{Bead: "bd-1", Agent: "codex", Model: "gpt", Status: "timeout", Reason: "watch-timeout-60s", Duration: 60, Attempt: 2, MaxRetries: 2}
	now := time.Date(2026, 2, 10, 8, 0, 0, 0, time.UTC)
	h.Announce(ctx, o, 0, now, nil, &console)
	want := "validate-state.sh <--runs> </s/runs/bd-1.json> <--results> </s/results/bd-1.json>\n" +
		"wake-gateway.sh <Agent bd-1 timeout (60s, codex/gpt, attempt 2/2, reason: watch-timeout-60s). Check state/results/bd-1.json and message Perttu with the result summary.>\n"
	if got := readFile(t, log); got != want {
		t.Errorf("hooks run:\n%s\nwant:\n%s", got, want)
	}
	if got := readFile(t, filepath.Join(root, "memory", "2026-02-10.md")); got != "# 2026-02-10\n\n"+MemoryLine(o) {
		t.Errorf("memory file = %q", got)
	}
	// Their failures are only reported.
	for _, s := range []string{"validate-state.sh exited 1", "wake-gateway.sh exited 1"} {
		if !strings.Contains(console.String(), s) {
			t.Errorf("console lacks %q:\n%s", s, console.String())
		}
	}

	// Without a workspace (only the relay, say) there is no memory file and no script.
	var nothing *Hooks
	nothing.Announce(ctx, o, 0, now, nil, &console)
	(&Hooks{}).Validate(ctx, "a", "b", nil, &console)
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	h := &Hooks{Root: root}
	var console bytes.Buffer
	if raw, v := h.Verify(ctx, "/repo", "bd-1", nil, &console); raw != nil || v != nil {
		t.Errorf("Verify without verify.sh = %q, %+v", raw, v)
	}
	out := `{"checks": {"lint": "pass", "tests": "pass", "ubs": "clean"}, "overall": "pass"}`
	script(t, root, "scripts/"+ScriptVerify, "#!/bin/sh\n[ \"$1 $2\" = '/repo bd-1' ] || exit 9\necho warn >&2\necho '"+out+"'\n")
	raw, v := h.Verify(ctx, "/repo", "bd-1", nil, &console)
	if string(raw) != out+"\n" || v == nil || v.Overall != "pass" || v.UBS != "clean" {
		t.Errorf("Verify = %q, %+v", raw, v)
	}
	if !strings.Contains(console.String(), "warn") {
		t.Errorf("verify.sh's errors are not on the console: %q", console.String())
	}
	// Failing: no verification, as dispatch.sh recorded null.
	if raw, v := h.Verify(ctx, "/other", "bd-1", nil, &console); raw != nil || v != nil {
		t.Errorf("Verify of a failing verify.sh = %q, %+v", raw, v)
	}
}

func TestRelay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	log := filepath.Join(dir, "relay.log")
	r := &Relay{Bin: script(t, dir, "relay", logger(log, 0)), Orchestrator: "athena"}
	run := &record.Run{Bead: "bd-1", SessionName: "agent-bd-1", Repo: "/r", Agent: "claude", Model: "sonnet",
		Prompt: "Fix <a> & b", Attempt: 1, MaxRetries: 2}
	now := time.Date(2026, 2, 10, 8, 0, 0, 0, time.UTC)
	var console bytes.Buffer
	r.Dispatched(ctx, DispatchOf(run, now), nil, &console)
	r.Completed(ctx, CompletionOf(run, 3, now), nil, &console)
	r.Wake(ctx, "bd-1", "Agent bd-1 failed", nil, &console)
	ev := `{"type":"dispatch","bead":"bd-1","session":"agent-bd-1","repo":"/r","agent":"claude","model":"sonnet","prompt":"Fix <a> & b","attempt":"1/2","timestamp":"2026-02-10T08:00:00Z"}`
	want := "relay <send> <agent-bd-1> <" + ev + "> <--agent> <athena> <--priority> <high> <--thread> <bd-1> <--tag> <dispatch,relay>\n" +
		"relay <send> <athena> <" + ev + "> <--agent> <athena> <--priority> <high> <--thread> <bd-1> <--tag> <dispatch,relay>\n" +
		"relay <release> <--all> <--agent> <agent-bd-1>\n" +
		`relay <send> <athena> <{"type":"completion","bead":"bd-1","session":"agent-bd-1","agent":"claude","model":"sonnet","repo":"/r","status":"failed","exit_code":3,"finished_at":"2026-02-10T08:00:00Z"}> <--agent> <agent-bd-1> <--thread> <bd-1> <--priority> <high> <--tag> <completion,dispatch>` + "\n" +
		"relay <read> <--agent> <athena> <--from> <agent-bd-1> <--thread> <bd-1> <--last> <20> <--mark-read> <--json>\n" +
		"relay <send> <athena> <Agent bd-1 failed> <--agent> <athena> <--priority> <high> <--thread> <bd-1> <--tag> <wake,dispatch>\n"
	if got := readFile(t, log); got != want {
		t.Errorf("relay commands:\n%s\nwant:\n%s", got, want)
	}
	if console.Len() != 0 {
		t.Errorf("console: %q", console.String())
	}

	// An orchestrator that is the session itself is sent the event once.
	os.Remove(log)
	(&Relay{Bin: r.Bin, Orchestrator: "agent-bd-1"}).Dispatched(ctx, DispatchOf(run, now), nil, &console)
	if got := strings.Count(readFile(t, log), "\n"); got != 1 {
		t.Errorf("dispatch events to an orchestrator that is the session: %d, want 1", got)
	}

	// Register: the session registered and its heartbeat sent at once; stop ends it.
	os.Remove(log)
	stop := r.Register("agent-bd-1", "claude", "sonnet", "bd-1", nil)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(readFileOr(log), "heartbeat") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	want = "relay <register> <agent-bd-1> <--program> <claude> <--model> <sonnet> <--task> <bead bd-1 running> <--bead> <bd-1>\n" +
		"relay <heartbeat> <--agent> <agent-bd-1> <--task> <bead bd-1 running>\n"
	if got := readFile(t, log); got != want {
		t.Errorf("relay commands of Register:\n%s\nwant:\n%s", got, want)
	}

	// A failing relay is reported, and that is all.
	failing := &Relay{Bin: script(t, dir, "bad-relay", "#!/bin/sh\nexit 2\n"), Orchestrator: "athena"}
	console.Reset()
	failing.Wake(ctx, "bd-1", "m", nil, &console)
	if !strings.Contains(console.String(), "relay send exited 2") {
		t.Errorf("console: %q", console.String())
	}
	if got := Orchestrator(func(string) string { return "" }); got != DefaultOrchestrator {
		t.Errorf("Orchestrator() = %q", got)
	}
}

func readFileOr(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func TestTruthsayer(t *testing.T) {
	dir := t.TempDir()
	stopped := filepath.Join(dir, "stopped")
	bin := script(t, dir, "truthsayer", "#!/bin/sh\ntrap 'touch "+stopped+"; exit 0' TERM\necho \"$1 $2\"\n"+
		"printf 'ERROR: a\\nWARNING: b\\nINFO: c\\n  ERROR: indented\\n'\nwhile :; do sleep 0.05; done\n")
	log := TruthsayerLog(filepath.Join(dir, "state"), "bd-1")
	w, err := StartTruthsayer(bin, "/repo", log, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for CountFindings(log) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := CountFindings(log); got != 2 {
		t.Errorf("CountFindings = %d, want 2 (lines starting with ERROR or WARNING)", got)
	}
	if !strings.HasPrefix(readFile(t, log), "watch /repo\n") {
		t.Errorf("log: %q", readFile(t, log))
	}
	// A watcher that is not the process started (its pid reused) is left alone.
	(&Watcher{PID: w.PID, Start: w.Start + 1}).Stop()
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(stopped); err == nil {
		t.Error("Stop stopped a process that was not the watcher")
	}
	w.Stop()
	for _, err := os.Stat(stopped); err != nil && time.Now().Before(deadline); _, err = os.Stat(stopped) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(stopped); err != nil {
		t.Error("Stop did not stop the watcher")
	}
	(*Watcher)(nil).Stop()
	if got := CountFindings(filepath.Join(dir, "none.log")); got != 0 {
		t.Errorf("CountFindings(missing) = %d", got)
	}
	env := map[string]string{"HOME": "/h"}
	if got := TruthsayerBin(func(k string) string { return env[k] }); got != "/h/truthsayer/truthsayer" {
		t.Errorf("TruthsayerBin() = %q", got)
	}
}

func TestCompact(t *testing.T) {
	if got, want := compact(struct {
		A string `json:"a"`
		B int    `json:"b"`
	}{"<x & y>", 1}), `{"a":"<x & y>","b":1}`; got != want {
		t.Errorf("compact = %s, want %s (jq -c escapes no HTML)", got, want)
	}
}
