package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record/hostile"
)

// cheapShapes are the hostile shapes a fuzz run can plant at every execution: links, a named
// pipe, a directory. The record shapes of 16 MiB are the memory testscripts'; here records come
// from the fuzzer, with keys as long as it asks.
var cheapShapes = []hostile.Shape{hostile.LinkToZero, hostile.LinkToRecord, hostile.LinkLoop, hostile.Dangling,
	hostile.FIFO, hostile.Directory}

// plantFuzzed fills dir from a fuzzer's layout: each byte an entry (at most 8): a record from
// docs, one of cheapShapes, or a record with a key of up to 1 MiB (the byte says how long), under
// a name that may hold a newline or an escape. It returns the names of the entries made.
func plantFuzzed(t *testing.T, dir string, layout []byte, docs ...[]byte) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, c := range layout {
		if i == 8 {
			break
		}
		name := fmt.Sprintf("bd-%d.json", i)
		if c&0x80 != 0 {
			name = fmt.Sprintf("bd-%d\x1b]0;x\a\n.json", i)
		}
		path := filepath.Join(dir, name)
		var err error
		switch k := int(c&0x7f) % (len(docs) + len(cheapShapes) + 1); {
		case k < len(docs):
			err = os.WriteFile(path, docs[k], 0o600)
		case k < len(docs)+len(cheapShapes):
			err = hostile.Plant(dir, name, cheapShapes[k-len(docs)])
		default:
			key := strings.Repeat("k", int(c)<<13)
			err = os.WriteFile(path, []byte(`{"bead":"bd-k","`+key+`":`+string(docs[0])+`}`), 0o600)
		}
		if err != nil {
			t.Fatalf("planting %q: %v", name, err)
		}
		names = append(names, name)
	}
	return names
}

// withTimeout fails the test if fn takes over 20 s: a FIFO waited on, a loop.
func withTimeout(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("over 20 s: something waits for ever")
	}
}

// FuzzAudit: whatever a state directory holds (records from the fuzzer, links to /dev/zero, to
// a record, to themselves, to nothing, a named pipe, a directory named like a record, keys of a
// megabyte, names holding escapes), validate-state's engine checks (and with --fix rewrites)
// each entry and reports each exactly once, follows no link, waits on no pipe, and never panics.
func FuzzAudit(f *testing.F) {
	for _, seed := range []struct {
		layout string
		a, b   string
	}{
		{"\x00\x01\x02\x03\x04\x05\x06\x07", `{"bead":"bd-0","agent":"claude","model":"m","repo":"/r","started_at":"'$START'","attempt":1,"prompt":"p"}`, `{"bead":"bd-0","status":"done","finished_at":"2026-01-01T00:00:00Z","attempt":"2","duration_seconds":1e400}`},
		{"\x08\x88\x01", `{"schema_version":1e400,"status":-1e400,"x":[1e999]}`, `[[[[[[[[[[]]]]]]]]]]`},
		{"\x00\x01", "\xef\xbb\xbf{\"\\u001b[2J\":1}", `{"a":1} {"b":2}`},
	} {
		f.Add([]byte(seed.layout), []byte(seed.a), []byte(seed.b), true)
	}
	f.Fuzz(func(t *testing.T, layout, a, b []byte, fix bool) {
		state := t.TempDir()
		runs := plantFuzzed(t, filepath.Join(state, "runs"), layout, a, b)
		results := plantFuzzed(t, filepath.Join(state, "results"), reverse(layout), b, a)
		auditor, _, err := New(Options{Fix: fix, MaxRetries: 2, StateDir: state, Workers: 3}, []string{"run", "result"})
		if err != nil {
			t.Fatal(err)
		}
		var got []Report
		withTimeout(t, func() {
			auditor.Run([]Target{{Path: filepath.Join(state, "runs"), Kind: "run"}, {Path: filepath.Join(state, "results"), Kind: "result"}},
				func(r Report) { got = append(got, r) })
		})
		want := len(runs) + len(results)
		for _, n := range results {
			if isVerify(n, "result") {
				want--
			}
		}
		if len(got) != want {
			t.Fatalf("Run reported %d files of %d", len(got), want)
		}
		for _, r := range got {
			if r.SetAside != "" {
				// Moved into the attempts archive (a record no reader can read): it is there,
				// whole, a regular file, and gone from where it was.
				if fi, err := os.Lstat(r.SetAside); err != nil || !fi.Mode().IsRegular() {
					t.Fatalf("%q set aside as %q, which is not a regular file: %v", r.Path, r.SetAside, err)
				}
				if _, err := os.Lstat(r.Path); err == nil {
					t.Errorf("%q set aside, yet still there", r.Path)
				}
				continue
			}
			fi, err := os.Lstat(r.Path)
			if err != nil {
				t.Fatalf("reported %q, which does not exist: %v", r.Path, err)
			}
			if fi.Mode()&os.ModeSymlink != 0 && (r.Valid || !strings.Contains(r.Error, "symbolic link")) {
				t.Errorf("%q is a link, reported %+v: it must not be followed", r.Path, r)
			}
			if fi.Mode()&os.ModeNamedPipe != 0 && r.Valid {
				t.Errorf("%q is a named pipe, reported valid", r.Path)
			}
		}
		// --fix leaves no temporary file behind.
		for _, dir := range []string{"runs", "results"} {
			entries, _ := os.ReadDir(filepath.Join(state, dir))
			for _, e := range entries {
				if _, ok := isLeftover(e.Name()); ok {
					t.Errorf("left %s in %s", e.Name(), dir)
				}
			}
		}
	})
}

func reverse(b []byte) []byte {
	r := make([]byte, len(b))
	for i, c := range b {
		r[len(b)-1-i] = c
	}
	return r
}
