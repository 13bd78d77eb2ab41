package main

import (
	"bytes"
	"strings"
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
	r.summary()
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
