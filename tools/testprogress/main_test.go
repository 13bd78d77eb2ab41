package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// events are go test -json's lines for two packages: one passes, one fails a subtest.
const events = `{"Time":"2026-11-25T10:00:00Z","Action":"start","Package":"p/ok"}
{"Time":"2026-11-25T10:00:00Z","Action":"start","Package":"p/bad"}
{"Time":"2026-11-25T10:00:00Z","Action":"run","Package":"p/ok","Test":"TestA"}
{"Time":"2026-11-25T10:00:00Z","Action":"output","Package":"p/ok","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Time":"2026-11-25T10:00:00Z","Action":"output","Package":"p/ok","Test":"TestA","Output":"    a_test.go:1: a log of a test that passes\n"}
{"Time":"2026-11-25T10:00:00Z","Action":"output","Package":"p/ok","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Time":"2026-11-25T10:00:00Z","Action":"pass","Package":"p/ok","Test":"TestA","Elapsed":0}
{"Time":"2026-11-25T10:00:00Z","Action":"output","Package":"p/ok","Output":"PASS\n"}
{"Time":"2026-11-25T10:00:00Z","Action":"output","Package":"p/ok","Output":"ok  \tp/ok\t0.010s\n"}
{"Time":"2026-11-25T10:00:00Z","Action":"pass","Package":"p/ok","Elapsed":0.01}
{"Time":"2026-11-25T10:00:01Z","Action":"output","Package":"p/bad","Test":"TestS","Output":"=== RUN   TestS\n"}
{"Time":"2026-11-25T10:00:01Z","Action":"output","Package":"p/bad","Test":"TestS/x","Output":"=== CONT  TestS/x\n"}
{"Time":"2026-11-25T10:00:01Z","Action":"output","Package":"p/bad","Test":"TestS/x","Output":"    testscript.go:1: FAIL: testdata/x.txtar:3: no match\n"}
{"Time":"2026-11-25T10:00:01Z","Action":"output","Package":"p/bad","Test":"TestS/x","Output":"    --- FAIL: TestS/x (1.00s)\n"}
{"Time":"2026-11-25T10:00:01Z","Action":"fail","Package":"p/bad","Test":"TestS/x","Elapsed":1}
{"Time":"2026-11-25T10:00:01Z","Action":"output","Package":"p/bad","Test":"TestS","Output":"--- FAIL: TestS (0.00s)\n"}
{"Time":"2026-11-25T10:00:01Z","Action":"fail","Package":"p/bad","Test":"TestS","Elapsed":0}
{"Time":"2026-11-25T10:00:01Z","Action":"output","Package":"p/bad","Output":"FAIL\n"}
{"Time":"2026-11-25T10:00:01Z","Action":"output","Package":"p/bad","Output":"FAIL\tp/bad\t1.100s\n"}
{"Time":"2026-11-25T10:00:01Z","Action":"fail","Package":"p/bad","Elapsed":1.1}
`

func TestReportIsPlainGoTestsOutput(t *testing.T) {
	var stdout, stderr bytes.Buffer
	r := newReport(&stdout, &stderr)
	for _, l := range strings.Split(strings.TrimSuffix(events, "\n"), "\n") {
		r.line([]byte(l))
	}
	r.summary(false)
	got := stdout.String()
	for _, want := range []string{
		"ok  \tp/ok\t0.010s\n",
		"    testscript.go:1: FAIL: testdata/x.txtar:3: no match\n    --- FAIL: TestS/x (1.00s)\n",
		"--- FAIL: TestS (0.00s)\n",
		"FAIL\n",
		"FAIL\tp/bad\t1.100s\n",
		"failed (", "\n    p/bad TestS/x\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"=== RUN", "=== CONT", "a log of a test that passes", "--- PASS", "PASS\n", "p/bad TestS\n"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("the output has %q:\n%s", unwanted, got)
		}
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", &stderr)
	}
}

func TestProgressNamesTheRunningPackages(t *testing.T) {
	var stdout, stderr bytes.Buffer
	r := newReport(&stdout, &stderr)
	lines := strings.Split(events, "\n")
	for _, l := range lines[:15] { // p/ok has ended, p/bad's TestS/x has failed
		r.line([]byte(l))
	}
	r.progress(time.Date(2026, 11, 25, 10, 1, 30, 0, time.UTC))
	if got, want := stderr.String(), "running p/bad (1m30s, 1 tests ended, 1 failed)\n"; !strings.HasSuffix(got, want) {
		t.Errorf("progress = %q, want it to end with %q", got, want)
	}
	r.line([]byte(lines[19]))
	stderr.Reset()
	r.progress(time.Now())
	if stderr.Len() > 0 {
		t.Errorf("progress with nothing running = %q", &stderr)
	}
}

func TestProgressBeforeAnyPackageSaysBuilding(t *testing.T) {
	var stdout, stderr bytes.Buffer
	r := newReport(&stdout, &stderr)
	r.progress(r.begun.Add(30 * time.Second))
	if got, want := stderr.String(), "... 30s: building the tests\n"; got != want {
		t.Errorf("progress = %q, want %q", got, want)
	}
}

func TestProgressNamesPackagesInTheModule(t *testing.T) {
	var stdout, stderr bytes.Buffer
	r := newReport(&stdout, &stderr)
	r.module = "p/"
	r.line([]byte(strings.Split(events, "\n")[1]))
	r.progress(time.Date(2026, 11, 25, 10, 0, 5, 0, time.UTC))
	if got, want := stderr.String(), ": running bad (5s, 0 tests ended)\n"; !strings.HasSuffix(got, want) {
		t.Errorf("progress = %q, want it to end with %q", got, want)
	}
}

func TestProgressNamesATestThatRunsLong(t *testing.T) {
	var stdout, stderr bytes.Buffer
	r := newReport(&stdout, &stderr)
	for _, l := range []string{
		`{"Time":"2026-11-25T10:00:00Z","Action":"start","Package":"p"}`,
		`{"Time":"2026-11-25T10:00:00Z","Action":"run","Package":"p","Test":"TestS"}`,
		`{"Time":"2026-11-25T10:00:00Z","Action":"run","Package":"p","Test":"TestS/a"}`,
		`{"Time":"2026-11-25T10:00:00Z","Action":"pause","Package":"p","Test":"TestS/a"}`,
		`{"Time":"2026-11-25T10:00:00Z","Action":"run","Package":"p","Test":"TestS/b"}`,
		`{"Time":"2026-11-25T10:00:00Z","Action":"pause","Package":"p","Test":"TestS/b"}`,
		`{"Time":"2026-11-25T10:00:10Z","Action":"cont","Package":"p","Test":"TestS/a"}`,
		`{"Time":"2026-11-25T10:00:20Z","Action":"cont","Package":"p","Test":"TestS/b"}`,
		`{"Time":"2026-11-25T10:00:30Z","Action":"pass","Package":"p","Test":"TestS/b"}`,
	} {
		r.line([]byte(l))
	}
	r.progress(time.Date(2026, 11, 25, 10, 0, 50, 0, time.UTC))
	if strings.Contains(stderr.String(), ";") {
		t.Errorf("progress names a test that ran under a minute: %q", &stderr)
	}
	stderr.Reset()
	r.progress(time.Date(2026, 11, 25, 10, 2, 10, 0, time.UTC))
	if got, want := stderr.String(), "running p (2m10s, 1 tests ended; TestS/a for 2m0s)\n"; !strings.HasSuffix(got, want) {
		t.Errorf("progress = %q, want it to end with %q", got, want)
	}
}

// timeout is go test -json's lines for a package whose test hung until -timeout: the panic and
// the goroutines' stacks are output of the test that ran last, which never ends.
const timeout = `{"Time":"2026-12-07T14:26:02Z","Action":"start","Package":"p/hang"}
{"Time":"2026-12-07T14:26:02Z","Action":"run","Package":"p/hang","Test":"TestFast"}
{"Time":"2026-12-07T14:26:02Z","Action":"output","Package":"p/hang","Test":"TestFast","Output":"=== RUN   TestFast\n"}
{"Time":"2026-12-07T14:26:02Z","Action":"output","Package":"p/hang","Test":"TestFast","Output":"--- PASS: TestFast (0.00s)\n"}
{"Time":"2026-12-07T14:26:02Z","Action":"pass","Package":"p/hang","Test":"TestFast","Elapsed":0}
{"Time":"2026-12-07T14:26:02Z","Action":"run","Package":"p/hang","Test":"TestHang"}
{"Time":"2026-12-07T14:26:02Z","Action":"output","Package":"p/hang","Test":"TestHang","Output":"=== RUN   TestHang\n"}
{"Time":"2026-12-07T14:26:02Z","Action":"output","Package":"p/hang","Test":"TestHang","Output":"    a_test.go:5: before\n"}
{"Time":"2026-12-07T14:26:05Z","Action":"output","Package":"p/hang","Test":"TestHang","Output":"panic: test timed out after 3s\n"}
{"Time":"2026-12-07T14:26:05Z","Action":"output","Package":"p/hang","Test":"TestHang","Output":"\trunning tests:\n"}
{"Time":"2026-12-07T14:26:05Z","Action":"output","Package":"p/hang","Test":"TestHang","Output":"\t\tTestHang (3s)\n"}
{"Time":"2026-12-07T14:26:05Z","Action":"output","Package":"p/hang","Test":"TestHang","Output":"\n"}
{"Time":"2026-12-07T14:26:05Z","Action":"output","Package":"p/hang","Test":"TestHang","Output":"goroutine 20 [sleep]:\n"}
{"Time":"2026-12-07T14:26:05Z","Action":"output","Package":"p/hang","Test":"TestHang","Output":"time.Sleep(0x34630b8a000)\n"}
{"Time":"2026-12-07T14:26:05Z","Action":"output","Package":"p/hang","Test":"TestHang","Output":"p/hang.TestHang(0x33c54655e6c8?)\n"}
{"Time":"2026-12-07T14:26:05Z","Action":"output","Package":"p/hang","Test":"TestHang","Output":"\t/tmp/p/a_test.go:5 +0x49\n"}
{"Time":"2026-12-07T14:26:05Z","Action":"output","Package":"p/hang","Output":"FAIL\tp/hang\t3.006s\n"}
{"Time":"2026-12-07T14:26:05Z","Action":"fail","Package":"p/hang","Elapsed":3.007}
`

// A package that timed out shows the timeout's panic, the goroutines' stacks and the test that
// did not end: testprogress dropped them all, and the log said "FAIL p/hang 614.409s" only.
func TestReportKeepsATimeoutsPanicAndStacks(t *testing.T) {
	var stdout, stderr bytes.Buffer
	r := newReport(&stdout, &stderr)
	r.module = "p/"
	for _, l := range strings.Split(strings.TrimSuffix(timeout, "\n"), "\n") {
		r.line([]byte(l))
	}
	r.summary(false)
	got := stdout.String()
	for _, want := range []string{
		"    a_test.go:5: before\npanic: test timed out after 3s\n\trunning tests:\n\t\tTestHang (3s)\n",
		"goroutine 20 [sleep]:\n", "p/hang.TestHang(0x33c54655e6c8?)\n\t/tmp/p/a_test.go:5 +0x49\n",
		"FAIL\tp/hang\t3.006s\n",
		"failed (", "\n    p/hang TestHang (did not end)\n",
		"\ntests: 1 packages, 1 tests, 0 skipped, in 0s: FAILED 1: hang TestHang (did not end)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestFast") {
		t.Errorf("the output shows the test that passed:\n%s", got)
	}
}

// The tests that skipped are listed at the end with their reason, one line a package and
// reason; the last line sums up.
func TestSummaryListsSkipsAndSumsUp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	r := newReport(&stdout, &stderr)
	r.module = "p/"
	for _, l := range []string{
		`{"Action":"start","Package":"p/a"}`,
		`{"Action":"run","Package":"p/a","Test":"TestZsh"}`,
		`{"Action":"output","Package":"p/a","Test":"TestZsh","Output":"=== RUN   TestZsh\n"}`,
		`{"Action":"output","Package":"p/a","Test":"TestZsh","Output":"    a_test.go:4: zsh not found: the completions are not loaded (scripts/test-deps.sh installs it)\n"}`,
		`{"Action":"output","Package":"p/a","Test":"TestZsh","Output":"--- SKIP: TestZsh (0.00s)\n"}`,
		`{"Action":"skip","Package":"p/a","Test":"TestZsh"}`,
		`{"Action":"skip","Package":"p/a","Test":"TestS/one"}`,
		`{"Action":"output","Package":"p/a","Test":"TestS/two","Output":"    > [!exec:fish] skip 'needs fish'\n"}`,
		`{"Action":"skip","Package":"p/a","Test":"TestS/two"}`,
		`{"Action":"output","Package":"p/a","Test":"TestS/three","Output":"    need.go:71: zsh is not installed: its completion is not loaded\n"}`,
		`{"Action":"output","Package":"p/a","Test":"TestS/three","Output":"    testscript.go:609: WORK=$WORK\n"}`,
		`{"Action":"output","Package":"p/a","Test":"TestS/three","Output":"        > need zsh 'its completion is not loaded'\n"}`,
		`{"Action":"skip","Package":"p/a","Test":"TestS/three"}`,
		`{"Action":"pass","Package":"p/a","Test":"TestS"}`,
		`{"Action":"output","Package":"p/a","Output":"sweep: killed 1 processes the tests left running: [7 tmux]\n"}`,
		`{"Action":"output","Package":"p/a","Output":"ok  \tp/a\t0.010s\n"}`,
		`{"Action":"pass","Package":"p/a"}`,
	} {
		r.line([]byte(l))
	}
	r.summary(true)
	got := stdout.String()
	want := "sweep: killed 1 processes the tests left running: [7 tmux]\nok  \tp/a\t0.010s\n\nskipped (4):\n" +
		"    a: zsh not found: the completions are not loaded (scripts/test-deps.sh installs it) (TestZsh)\n" +
		"    a: (no reason given) (TestS/one)\n" +
		"    a: > [!exec:fish] skip 'needs fish' (TestS/two)\n" +
		"    a: zsh is not installed: its completion is not loaded (TestS/three)\n" +
		"\ntests: 1 packages, 5 tests, 4 skipped, in 0s: all passed\n"
	if got != want {
		t.Errorf("the output:\n%s\nwant:\n%s", got, want)
	}
}

// testprogress runs $GO test -json, exits with its status, and kills what the tests left
// running: here a fake go that starts a process in a session of its own and leaves it.
func TestRunKillsWhatTheTestsLeftRunning(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	fakeGo := filepath.Join(dir, "go")
	script := `#!/bin/sh
[ "$1" = list ] && { echo p; exit 0; }
setsid sh -c 'echo $$ > ` + pidFile + `; exec sleep 1000' </dev/null >/dev/null 2>&1 &
while [ ! -s ` + pidFile + ` ]; do sleep 0.01; done
printf '%s\n' '{"Action":"start","Package":"p/a"}'
printf '%s\n' '{"Action":"output","Package":"p/a","Output":"FAIL\tp/a\t0.1s\n"}'
printf '%s\n' '{"Action":"fail","Package":"p/a"}'
exit 1
`
	if err := os.WriteFile(fakeGo, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GO", fakeGo)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"./..."}, 0, &stdout, &stderr); code != 1 {
		t.Errorf("run = %d, want go test's 1; stderr: %s", code, &stderr)
	}
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the fake go's process: %q", b)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	want := fmt.Sprintf("testprogress: killed 1 processes the tests left running:\n    %d sleep 1000\n", pid)
	if got := stdout.String(); !strings.HasSuffix(got, want) || !strings.Contains(got, "FAIL\tp/a\t0.1s\n") || !strings.Contains(got, "FAILED 1: a\n") {
		t.Errorf("the output:\n%s\nwant it to end with a/FAILED and:\n%s", got, want)
	}
}
