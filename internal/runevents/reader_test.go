package runevents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEventReaderHostileFile: an events file read back holds what anyone could have written:
// a line over the bound and lines that are no events are skipped (counted), a line not yet
// complete waits for its end, a file larger than a batch is read a batch at a time, and a
// link in place of .swarm/history is refused.
func TestEventReaderHostileFile(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".swarm", "history"), 0o700)
	id := "2026-12-07-x-0000"
	ev := `{"seq":1,"time":"2026-12-07T00:00:00Z","event":"task-start","execution_id":"` + id + `","task":"a"}` + "\n"
	body := ev + strings.Repeat("x", maxLine+10) + "\n" + "not json\n" + `{"seq":2}` + "\n" + ev + `{"seq":3,"time":"t","ev`
	if err := os.WriteFile(Path(root, id), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(root, id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	evs, err := r.Read()
	if err != nil || len(evs) != 2 || r.Bad != 3 || evs[1].Task != "a" {
		t.Fatalf("Read = %+v, %v, %d bad; want 2 events, 3 bad", evs, err, r.Bad)
	}
	f, _ := os.OpenFile(Path(root, id), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`ent":"run-end"}` + "\n")
	// A file past the batch: read in several, every event in the end.
	for i := 0; i < readBatch/len(ev)+10; i++ {
		f.WriteString(ev)
	}
	f.Close()
	n, reads := 0, 0
	for more := true; more; more = r.More {
		evs, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		n += len(evs)
		reads++
	}
	if want := 1 + readBatch/len(ev) + 10; n != want || reads < 2 {
		t.Errorf("read %d events in %d reads, want %d in more than one", n, reads, want)
	}
	if r.Running() {
		t.Errorf("Running() = true for a file no run holds")
	}

	hostile := t.TempDir()
	os.MkdirAll(filepath.Join(hostile, ".swarm"), 0o700)
	os.Symlink(filepath.Join(root, ".swarm", "history"), filepath.Join(hostile, ".swarm", "history"))
	if _, err := OpenReader(hostile, id); err == nil {
		t.Errorf("OpenReader read through a link at .swarm/history")
	}
	if _, err := OpenReader(root, "../x"); err == nil {
		t.Errorf("OpenReader took ../x for an execution id")
	}
}

// TestAppend: a merge's event, appended after the run's, is read back with them.
func TestAppend(t *testing.T) {
	root := t.TempDir()
	id := "2026-12-07-x-0001"
	if err := Append(root, id, Event{Event: Merge, Task: "a", Branch: "feature/a", Commit: "abc"}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(root, id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	evs, err := r.Read()
	if err != nil || len(evs) != 1 || evs[0].Event != Merge || evs[0].Execution != id || evs[0].Branch != "feature/a" || evs[0].Time == "" {
		t.Errorf("Read = %+v, %v", evs, err)
	}
	if err := Append(root, "../x", Event{Event: Merge}); err == nil {
		t.Errorf("Append took ../x for an execution id")
	}
}
