package report

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
	bolt "go.etcd.io/bbolt"
)

// TestCacheFormatFollowsBead: what a cache entry holds is a Bead's fields; one added, removed or
// retyped must come with a new cacheFormat (and encodeEntry/decoder.bead taught it), or caches
// written before would be read as beads they are not.
func TestCacheFormatFollowsBead(t *testing.T) {
	const want = "ID string, Agent string, Model string, Template string, Task string, StartedAt string, " +
		"Attempt int, RunStatus string, RunSeconds *int64, HasResult bool, Status string, FinishedAt string, " +
		"Reason string, Verified string, Raw []uint8, Seconds int64, HasSeconds bool, Start time.Time, " +
		"Finish time.Time, HasStart bool, HasEnd bool"
	const wantFormat = 2 // 2: the chunks' totals (chunk.go)
	var fields []string
	bt := reflect.TypeOf(Bead{})
	for i := range bt.NumField() {
		fields = append(fields, bt.Field(i).Name+" "+bt.Field(i).Type.String())
	}
	if got := strings.Join(fields, ", "); got != want || cacheFormat != wantFormat {
		t.Errorf("Bead is now {%s} (cache format %d); it was {%s} in format %d: bump cacheFormat, update encodeEntry and decoder.bead, then this test", got, cacheFormat, want, wantFormat)
	}
}

// TestCacheEntryRoundTrip: a bead comes back from its entry as it went in, and any entry cut
// short or with a byte changed is refused, never a panic or another bead.
func TestCacheEntryRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := range 300 {
		b := randomBead(rng)
		e := entry{name: "bd-" + fmt.Sprint(i), run: true, result: rng.Intn(2) == 0, verify: rng.Intn(3) == 0}
		ids := fileIDs{run: randomID(rng), result: randomID(rng), verify: randomID(rng)}
		if !e.result {
			ids.result = record.FileID{}
		}
		if !e.verify {
			ids.verify = record.FileID{}
		}
		v := seal(e.name, encodeEntry(nil, e, &ids, b))
		if len(v) > entrySize(b) {
			t.Fatalf("entry %d is %d bytes, over entrySize's %d", i, len(v), entrySize(b))
		}
		got, ok := decodeForTest(e, v)
		if !ok || !reflect.DeepEqual(got, b) {
			t.Fatalf("entry %d: decoded %+v, %v; want %+v", i, got, ok, b)
		}
		for cut := range len(v) {
			if _, ok := decodeForTest(e, v[:cut]); ok {
				t.Fatalf("entry %d cut to %d of %d bytes was taken", i, cut, len(v))
			}
		}
		for range 20 {
			w := bytes.Clone(v)
			w[rng.Intn(len(w))] ^= byte(1 + rng.Intn(255))
			if _, ok := decodeForTest(e, w); ok {
				t.Fatalf("entry %d with a byte changed was taken", i)
			}
		}
		if _, ok := decodeForTest(entry{name: e.name + "x", run: true, result: e.result, verify: e.verify}, v); ok {
			t.Fatalf("entry %d was taken under another name", i)
		}
	}
}

// decodeForTest decodes a sealed entry as fromCache does, without the file checks.
func decodeForTest(e entry, v []byte) (*Bead, bool) {
	body, ok := unseal(e.name, v)
	if !ok {
		return nil, false
	}
	d := decoder{b: body}
	if d.byte() != entryFlags(e) {
		return nil, false
	}
	d.fileID()
	if e.result {
		d.fileID()
	}
	if e.verify {
		d.fileID()
	}
	b := d.bead(nil)
	return b, d.end()
}

func randomID(rng *rand.Rand) record.FileID {
	return record.FileID{Ino: rng.Int63(), Size: rng.Int63n(1 << 20), Mtime: rng.Int63(), Ctime: rng.Int63()}
}

func randomBead(rng *rand.Rand) *Bead {
	text := func() string {
		return []string{"", "claude", "done", "tests-failed", "2026-01-02T03:04:05Z", "ü…", strings.Repeat("x", 300)}[rng.Intn(7)]
	}
	b := &Bead{ID: text(), Agent: text(), Model: text(), Template: text(), Task: TaskType(text()), StartedAt: text(),
		Attempt: rng.Intn(5) - 1, RunStatus: text(), HasResult: rng.Intn(2) == 0, Status: text(), FinishedAt: text(),
		Reason: text(), Verified: text()}
	if rng.Intn(2) == 0 {
		v := rng.Int63n(1e6) - 10
		b.RunSeconds = &v
	}
	if rng.Intn(2) == 0 {
		b.Seconds, b.HasSeconds = rng.Int63n(1e6), true
	}
	if rng.Intn(2) == 0 {
		b.Start, b.HasStart = time.Unix(rng.Int63n(1e10)-1e9, rng.Int63n(1e9)).UTC(), true
	}
	if rng.Intn(2) == 0 {
		b.Finish, b.HasEnd = time.Date(1+rng.Intn(9998), 1, 1, 0, 0, 0, 0, time.UTC), true
	}
	return b
}

// history is a state directory the tests change as dispatch and people do.
type history struct {
	t     testing.TB
	dir   string
	rng   *rand.Rand
	next  int
	beads []string
}

func newHistory(t testing.TB, seed int64) *history {
	h := &history{t: t, dir: t.TempDir(), rng: rand.New(rand.NewSource(seed))}
	for _, d := range []string{"runs", "results"} {
		if err := os.MkdirAll(filepath.Join(h.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *history) pick() string { return h.beads[h.rng.Intn(len(h.beads))] }

// records are a run and its result for bead, of every shape the report reads.
func (h *history) records(bead string) (run, res string) {
	r := h.rng
	start := time.Date(2026, 1, 1+r.Intn(20), r.Intn(24), r.Intn(60), 0, 0, time.UTC)
	startText := start.Format(time.RFC3339)
	switch r.Intn(12) {
	case 0:
		startText = "'$START'"
	case 1:
		startText = start.Format("2006-01-02T15:04:05.000-07:00")
	}
	fin := start.Add(time.Duration(r.Intn(4000)-100) * time.Second).Format(time.RFC3339)
	agent := []string{"claude", "codex", ""}[r.Intn(3)]
	prompt := []string{"Fix ", "Build ", "Review ", "Tidy "}[r.Intn(4)] + strings.Repeat("y", r.Intn(40))
	tmpl := []string{`"feature"`, `"bug-fix"`, `null`, `""`}[r.Intn(4)]
	status := []string{"done", "done", "failed", "timeout", "running", "odd"}[r.Intn(6)]
	runStatus := []string{"", `,"status":"done"`, `,"status":"failed","duration_seconds":17`}[r.Intn(3)]
	verification := ""
	if r.Intn(4) == 0 {
		verification = `,"verification":{"overall":"pass"}`
	}
	run = fmt.Sprintf(`{"bead":%q,"agent":%q,"model":"m%d","started_at":%q,"attempt":%d,"prompt":%q,"template_name":%s%s}`,
		bead, agent, r.Intn(3), startText, 1+r.Intn(3), prompt, tmpl, runStatus)
	res = fmt.Sprintf(`{"bead":%q,"status":%q,"finished_at":%q,"reason":"r%d"%s}`, bead, status, fin, r.Intn(4), verification)
	switch r.Intn(20) {
	case 0:
		run = `{"bead":` // unreadable
	case 1:
		res = `{"status":` // unreadable
	}
	return run, res
}

// write writes path's content as dispatch does: a new file renamed into place.
func (h *history) write(rel, content string) {
	path := filepath.Join(h.dir, rel)
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		h.t.Fatal(err)
	}
}

// edit changes path's content in place, the same inode; its modification time is set a second
// on, so that its identity changes even within one tick of the file system's clock.
func (h *history) edit(rel, content string) {
	path := filepath.Join(h.dir, rel)
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	f.WriteString(content)
	f.Close()
	mt := fi.ModTime().Add(time.Second)
	os.Chtimes(path, mt, mt)
}

func (h *history) add(n int) {
	for range n {
		bead := fmt.Sprintf("bd-%04x", h.rng.Intn(1<<16))
		if h.rng.Intn(5) == 0 {
			bead = fmt.Sprintf("bd-%d", h.next) // ordered names, as a counter makes them
		}
		h.next++
		run, res := h.records(bead)
		h.write("runs/"+bead+".json", run)
		if h.rng.Intn(6) > 0 {
			h.write("results/"+bead+".json", res)
		}
		if h.rng.Intn(8) == 0 {
			h.write("results/"+bead+"-verify.json", []string{`{"overall":"fail"}`, `{"verification":{"overall":"pass"}}`, `[1]`}[h.rng.Intn(3)])
		}
		if h.rng.Intn(10) == 0 {
			os.MkdirAll(filepath.Join(h.dir, "attempts", bead), 0o755)
			h.write("attempts/"+bead+"/run-1.json", strings.Replace(run, `"attempt":`, `"attempt":1,"x":`, 1))
			h.write("attempts/"+bead+"/result-1.json", res)
		}
		if h.rng.Intn(15) == 0 {
			// A run saved under another name than its bead's, which finds its result by the bead.
			other := bead + "-copy"
			h.write("runs/"+other+".json", run)
		}
		h.beads = append(h.beads, bead)
	}
}

// change makes one random change of those a history sees.
func (h *history) change() string {
	bead := h.pick()
	run, res := h.records(bead)
	switch h.rng.Intn(7) {
	case 0:
		h.add(1 + h.rng.Intn(5))
		return "records added"
	case 1:
		h.write("results/"+bead+".json", res)
		return "a result replaced by rename"
	case 2:
		h.write("runs/"+bead+".json", run)
		return "a run replaced by rename"
	case 3:
		h.edit("results/"+bead+".json", res)
		return "a result edited in place"
	case 4:
		h.edit("runs/"+bead+".json", run)
		return "a run edited in place"
	case 5:
		os.Remove(filepath.Join(h.dir, []string{"runs", "results"}[h.rng.Intn(2)], bead+".json"))
		return "a record deleted"
	default:
		h.write("results/"+bead+"-verify.json", `{"overall":"pass"}`)
		return "a verification added"
	}
}

// reportCase is one way of reporting: the aggregator's period and the filter; with merge, as
// analyze-runs reports all beads in any format but CSV (Source.Merge, no rows).
type reportCase struct {
	period   string
	filter   Filter
	attempts bool
	merge    bool
}

func reportCases(t *testing.T) []reportCase {
	var cases []reportCase
	for _, f := range []struct {
		since, until          string
		agents, models, tmpls []string
	}{
		{}, {since: "2026-01-08"}, {until: "2026-01-12"}, {agents: []string{"claude"}},
		{models: []string{"m1", "m2"}, tmpls: []string{"custom", "feature"}},
	} {
		filter, err := NewFilter(f.since, f.until, f.agents, f.models, f.tmpls)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, reportCase{filter: filter})
	}
	cases = append(cases, reportCase{period: PeriodDay}, reportCase{period: PeriodWeek, attempts: true},
		reportCase{merge: true}, reportCase{merge: true, period: PeriodDay}, reportCase{merge: true, period: PeriodWeek},
		reportCase{merge: true, attempts: true}, reportCase{merge: true, period: PeriodWeek, attempts: true})
	return cases
}

// render is every format's output of a scan of dir through cache (nil: none), with the skipped
// files' warnings.
func render(t testing.TB, dir string, cache *Cache, rc reportCase) string {
	t.Helper()
	at := time.Date(2026, 2, 16, 12, 0, 0, 0, time.UTC)
	agg := NewAggregator(rc.period)
	var csvOut, out bytes.Buffer
	rows := NewCSVWriter(&csvOut)
	src := Source{Dir: dir, Attempts: rc.attempts, Cache: cache, Workers: 3}
	if rc.merge {
		src.Merge = agg.Merge
	}
	err := src.Scan(func(b *Bead) {
		if rc.filter.Match(b) {
			agg.Add(b)
			if !rc.merge {
				rows.Write(b)
			}
		}
	}, func(s Skipped) {
		agg.Skip()
		fmt.Fprintf(&out, "skipped %s: %v\n", s.Path, s.Err)
	})
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(agg, rc.filter, at)
	rep.Detailed = true
	for _, w := range []func() error{
		func() error { return WriteText(&out, rep) },
		func() error { return WriteMarkdown(&out, rep) },
		func() error { return WriteHTML(&out, rep) },
		func() error { return WritePrometheus(&out, rep) },
		func() error { return WriteTemplatesJSON(&out, agg.TemplateScores(at)) },
		func() error { return rows.Flush() },
	} {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	out.Write(csvOut.Bytes())
	// The JSON document without raw_data: the statistics as the aggregator made them.
	stats, _ := json.Marshal(rep.Stats)
	out.Write(stats)
	return out.String()
}

func testCache(dir string) *Cache {
	c := NewCache(statedir.Dir{Root: dir}.ReportCache(), "test")
	c.Fresh = 0
	c.chunkBits = 2 // chunks of about four pairs: a history of a hundred has many
	return c
}

// TestCacheGivesWhatTheRecordsGive: on random histories changed every way a history changes,
// with the cache deleted, damaged and written by another version between runs, every format
// and filter is the same through the cache as without it, and the cache does spare reads.
func TestCacheGivesWhatTheRecordsGive(t *testing.T) {
	cases := reportCases(t)
	for seed := int64(1); seed <= 4; seed++ {
		h := newHistory(t, seed)
		h.add(120)
		cachePath := statedir.Dir{Root: h.dir}.ReportCache()
		reused, summed := 0, 0
		for step := range 30 {
			what := h.change()
			switch h.rng.Intn(12) {
			case 0:
				os.Remove(cachePath)
				what += ", the cache deleted"
			case 1:
				damage(t, h.rng, cachePath)
				what += ", the cache damaged"
			case 2:
				restamp(t, cachePath)
				what += ", the cache from another version"
			}
			rc := cases[h.rng.Intn(len(cases))]
			want := render(t, h.dir, nil, rc)
			c := testCache(h.dir)
			got := render(t, h.dir, c, rc)
			if got != want {
				t.Fatalf("seed %d step %d (%s): through the cache (%+v) the report differs:\n%s", seed, step, what, c.Stats, firstDiff(got, want))
			}
			reused += c.Stats.Reused
			// And once more, from the cache just written.
			c = testCache(h.dir)
			if got := render(t, h.dir, c, rc); got != want {
				t.Fatalf("seed %d step %d (%s), second run: through the cache (%+v) the report differs:\n%s", seed, step, what, c.Stats, firstDiff(got, want))
			}
			if c.Stats.Off != "" || c.Stats.Read > c.Stats.Reused {
				t.Errorf("seed %d step %d: a run right after the cache was written: %+v, want most pairs from the cache", seed, step, c.Stats)
			}
			summed += c.Stats.Summed
			if c.Stats.Summed > 0 && !rc.merge {
				t.Errorf("seed %d step %d: %d pairs summed from their chunks for a report that is not of all beads", seed, step, c.Stats.Summed)
			}
		}
		if reused == 0 {
			t.Errorf("seed %d: nothing was ever taken from the cache", seed)
		}
		if summed == 0 {
			t.Errorf("seed %d: no chunk was ever added as its totals", seed)
		}
	}
}

// damage writes garbage over part of the cache file, or cuts it short.
func damage(t *testing.T, rng *rand.Rand, path string) {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return
	}
	switch rng.Intn(3) {
	case 0:
		data = data[:rng.Intn(len(data))]
	default:
		off := rng.Intn(len(data))
		for i := off; i < min(len(data), off+1+rng.Intn(64)); i++ {
			data[i] = byte(rng.Intn(256))
		}
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// restamp makes the cache one written by another version.
func restamp(t *testing.T, path string) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return // damaged: nothing to restamp
	}
	defer db.Close()
	db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keyStamp, []byte("analyze-runs cache format 0"))
	})
}

func firstDiff(got, want string) string {
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return fmt.Sprintf("line %d: %q\n   want %q", i+1, g, w)
		}
	}
	return "(same lines)"
}

// TestCacheConcurrentWriter: records replaced while a scan through the cache reads them leave a
// cache that the next scan, once they are still, reads as the records.
func TestCacheConcurrentWriter(t *testing.T) {
	h := newHistory(t, 7)
	h.add(300)
	render(t, h.dir, testCache(h.dir), reportCase{merge: true})
	writer := newHistory(t, 8)
	writer.dir, writer.beads = h.dir, h.beads
	for round := range 5 {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				bead := writer.pick()
				run, res := writer.records(bead)
				if writer.rng.Intn(2) == 0 {
					writer.write("runs/"+bead+".json", run)
				} else {
					writer.edit("results/"+bead+".json", res)
				}
			}
		}()
		render(t, h.dir, testCache(h.dir), reportCase{merge: true})
		close(stop)
		<-done
		want := render(t, h.dir, nil, reportCase{merge: true})
		c := testCache(h.dir)
		if got := render(t, h.dir, c, reportCase{merge: true}); got != want {
			t.Fatalf("round %d: after a concurrent writer, the cache (%+v) gives another report:\n%s", round, c.Stats, firstDiff(got, want))
		}
	}
}

// TestCacheVerify: an entry whose bead differs from its files though their identities are the
// ones it holds (a file edited in place with its times put back) gives a wrong report through
// the cache; --verify-cache names it, reports from the records and writes the cache anew.
func TestCacheVerify(t *testing.T) {
	h := newHistory(t, 3)
	h.add(40)
	c := testCache(h.dir)
	want := render(t, h.dir, c, reportCase{})
	// Tamper with one entry's bead, its identities and checksum kept right.
	db, err := bolt.Open(c.Path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBeads)
		k, v := b.Cursor().First()
		victim = string(k)
		body, _ := unseal(victim, v)
		n := identityLen(body)
		d := decoder{b: body[n:]}
		bead := d.bead(nil)
		bead.Status = map[string]string{"done": "failed"}[bead.Status]
		if bead.Status == "" {
			bead.Status = "done"
		}
		var e entry
		e.name, e.run = victim, true
		nb := append(bytes.Clone(body[:n]), encodeEntry(nil, e, &fileIDs{}, bead)[1+len(appendID(nil, record.FileID{})):]...)
		return b.Put(k, seal(victim, nb))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := render(t, h.dir, testCache(h.dir), reportCase{}); got == want {
		t.Fatal("the tampered cache gave the right report: the test tampers with nothing")
	}
	c = testCache(h.dir)
	c.Verify = true
	if got := render(t, h.dir, c, reportCase{}); got != want {
		t.Fatalf("--verify-cache's report differs from the records':\n%s", firstDiff(got, want))
	}
	if c.Stats.Differ != 1 || len(c.Stats.Differences) != 1 || !strings.HasSuffix(c.Stats.Differences[0], victim+".json") {
		t.Errorf("--verify-cache found %+v, want %s named", c.Stats, victim)
	}
	c = testCache(h.dir)
	if got := render(t, h.dir, c, reportCase{}); got != want || c.Stats.Reused == 0 {
		t.Errorf("after --verify-cache, the cache (%+v) gives another report:\n%s", c.Stats, firstDiff(got, want))
	}
}

// TestCacheKilled: a run killed at any point while it writes the cache leaves one that gives the
// records' report.
func TestCacheKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	h := newHistory(t, 11)
	h.add(3000)
	want := render(t, h.dir, nil, reportCase{merge: true})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for round := range 12 {
		if round%3 == 0 {
			os.Remove(statedir.Dir{Root: h.dir}.ReportCache()) // a first run: a rebuild
		} else {
			for range 20 {
				h.change() // an update in place
			}
			want = render(t, h.dir, nil, reportCase{merge: true})
		}
		cmd := exec.Command(exe, "-test.run=^TestCacheHelper$")
		cmd.Env = append(os.Environ(), "REPORT_CACHE_HELPER="+h.dir)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(h.rng.Intn(150)) * time.Millisecond) // a kill at a random point
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		c := testCache(h.dir)
		if got := render(t, h.dir, c, reportCase{merge: true}); got != want {
			t.Fatalf("round %d: after a run killed (it printed %q), the cache (%+v) gives another report:\n%s", round, out.String(), c.Stats, firstDiff(got, want))
		}
	}
}

// TestCacheHelper is the run TestCacheKilled kills: a scan through the cache of the state
// directory REPORT_CACHE_HELPER names.
func TestCacheHelper(t *testing.T) {
	dir := os.Getenv("REPORT_CACHE_HELPER")
	if dir == "" {
		t.Skip("run by TestCacheKilled")
	}
	for range 3 {
		c := testCache(dir)
		render(t, dir, c, reportCase{merge: true})
		fmt.Printf("%+v\n", c.Stats)
	}
}

// TestCacheHostile: the cache is held to the records' rules: a link where it goes is never
// followed, a cache directory that is a link or someone else's is not used (with a warning), a
// cache file of someone else's or over its bound is written anew, and it is 0600.
func TestCacheHostile(t *testing.T) {
	h := newHistory(t, 5)
	h.add(30)
	want := render(t, h.dir, nil, reportCase{merge: true})
	sd := statedir.Dir{Root: h.dir}
	check := func(what string, wantOff bool) *Cache {
		t.Helper()
		c := testCache(h.dir)
		if got := render(t, h.dir, c, reportCase{merge: true}); got != want {
			t.Fatalf("%s: the report differs:\n%s", what, firstDiff(got, want))
		}
		if (c.Stats.Off != "") != wantOff || (wantOff && !c.Stats.Warn) {
			t.Errorf("%s: cache stats %+v; want it used: %v, a warning when not", what, c.Stats, !wantOff)
		}
		return c
	}

	// A link planted where the cache goes: replaced, its target untouched.
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("precious"), 0o644)
	os.MkdirAll(sd.Cache(), 0o700)
	os.Symlink(target, sd.ReportCache())
	check("a link at the cache's path", false)
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("the link's target was written: %q", b)
	}
	if fi, err := os.Lstat(sd.ReportCache()); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("the cache is %v, %v; want a regular file, 0600", fi.Mode(), err)
	}

	// The same with --rebuild-cache, which does not open what is there: replaced all the same.
	os.Remove(sd.ReportCache())
	os.Symlink(target, sd.ReportCache())
	c := testCache(h.dir)
	c.Rebuild = true
	if got := render(t, h.dir, c, reportCase{merge: true}); got != want {
		t.Fatalf("--rebuild-cache over a link: the report differs:\n%s", firstDiff(got, want))
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("--rebuild-cache over a link: its target was written: %q", b)
	}
	if fi, err := os.Lstat(sd.ReportCache()); err != nil || !fi.Mode().IsRegular() || c.Stats.Off != "" {
		t.Errorf("--rebuild-cache over a link: the cache is %v, %v (%+v); want a regular file", fi.Mode(), err, c.Stats)
	}

	// Made readable by others: back to 0600.
	os.Chmod(sd.ReportCache(), 0o644)
	check("a cache readable by others", false)
	if fi, _ := os.Stat(sd.ReportCache()); fi.Mode().Perm() != 0o600 {
		t.Errorf("the cache is %v, want 0600", fi.Mode().Perm())
	}

	// Over its bound (a sparse file): written anew.
	os.Truncate(sd.ReportCache(), maxCacheBytes(40)+1)
	if c := check("a cache over its bound", false); !strings.Contains(c.Stats.Rebuilt, "over") {
		t.Errorf("a cache over its bound: %+v, want it rebuilt for its size", c.Stats)
	}

	// Someone else's: written anew (as root, which can give it away).
	if os.Geteuid() == 0 {
		os.Chown(sd.ReportCache(), 12345, 12345)
		if c := check("someone else's cache", false); !strings.Contains(c.Stats.Rebuilt, "uid 12345") {
			t.Errorf("someone else's cache: %+v, want it rebuilt", c.Stats)
		}
	}

	// The cache directory a link: not used.
	os.RemoveAll(sd.Cache())
	elsewhere := t.TempDir()
	os.Symlink(elsewhere, sd.Cache())
	check("a link as the cache directory", true)
	if names, _ := os.ReadDir(elsewhere); len(names) != 0 {
		t.Errorf("the cache was written through a linked directory: %v", names)
	}

	// The cache directory a file: not used.
	os.Remove(sd.Cache())
	os.WriteFile(sd.Cache(), nil, 0o600)
	check("a file as the cache directory", true)
}

// cacheExtent is the page size of the bbolt file at path and the bytes it must hold (its
// high-water mark in pages, times the page size), as bbolt itself reads them.
func cacheExtent(t testing.TB, path string) (pageSize, size int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		size = int(tx.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return db.Info().PageSize, size
}

// truncations are the lengths to cut a file of n bytes to, of which need are its pages: every
// page boundary, a byte short of the pages, and random ones.
func truncations(rng *rand.Rand, n, need, pageSize int) []int {
	offs := []int{1, need - 1}
	for at := 0; at <= n; at += pageSize {
		offs = append(offs, at)
	}
	for range 12 {
		offs = append(offs, rng.Intn(n))
	}
	var in []int
	for _, at := range offs {
		if at >= 0 && at < n && !slices.Contains(in, at) {
			in = append(in, at)
		}
	}
	return in
}

// TestCacheTruncated: a cache cut short at any length (every page boundary, a byte either side,
// random ones) gives the records' report, through the cache, with --rebuild-cache and with
// --verify-cache, and is written anew: said unreadable when its meta pages describe more than
// is left, except with --rebuild-cache, which never opens it. It crashed every run: a bbolt
// panic or a fault on its map (issue 27, bug 4).
func TestCacheTruncated(t *testing.T) {
	h := newHistory(t, 27)
	h.add(300)
	rc := reportCase{merge: true, attempts: true}
	want := render(t, h.dir, nil, rc)
	path := statedir.Dir{Root: h.dir}.ReportCache()
	render(t, h.dir, testCache(h.dir), rc)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize, need := cacheExtent(t, path)
	if need/pageSize < 8 {
		t.Fatalf("the cache has %d pages: too few to cut it in many places", need/pageSize)
	}
	t.Logf("%d bytes, %d pages of %d in use", len(whole), need/pageSize, pageSize)
	for _, at := range truncations(h.rng, len(whole), need, pageSize) {
		for _, mode := range []string{"through", "--rebuild-cache", "--verify-cache"} {
			if err := os.WriteFile(path, whole[:at], 0o600); err != nil {
				t.Fatal(err)
			}
			c := testCache(h.dir)
			c.Rebuild, c.Verify = mode == "--rebuild-cache", mode == "--verify-cache"
			if got := render(t, h.dir, c, rc); got != want {
				t.Fatalf("cut to %d bytes, %s: the report differs (%+v):\n%s", at, mode, c.Stats, firstDiff(got, want))
			}
			wantUnreadable := at < need && mode != "--rebuild-cache"
			if (c.Stats.Unreadable != "") != wantUnreadable || c.Stats.Off != "" || c.Stats.Rebuilt == "" && at < need {
				t.Errorf("cut to %d bytes of %d needed, %s: %+v; want it unreadable: %v, and rebuilt", at, need, mode, c.Stats, wantUnreadable)
			}
			c = testCache(h.dir)
			if got := render(t, h.dir, c, rc); got != want || c.Stats.Rebuilt != "" || c.Stats.Reused == 0 {
				t.Fatalf("cut to %d bytes, %s, then a run: %+v, want the cache whole again:\n%s", at, mode, c.Stats, firstDiff(got, want))
			}
		}
	}
}

// TestCacheCutUnderTheScan: a cache cut short after it was opened, under the scan's map (so the
// scan's reads of it fault), gives the records' report and is removed, to be rebuilt, with a
// warning; with --verify-cache and --attempts too, where the rebuild is given entries of the
// old map as they are (a bead with attempts), which its writer read unguarded, and faulted.
// With every bead's entry given so, only the writer reads the old map.
func TestCacheCutUnderTheScan(t *testing.T) {
	mixed := newHistory(t, 28)
	mixed.add(300)
	attempts := newHistory(t, 31)
	attempts.add(60)
	for _, bead := range attempts.beads {
		run, res := attempts.records(bead)
		os.MkdirAll(filepath.Join(attempts.dir, "attempts", bead), 0o755)
		attempts.write("attempts/"+bead+"/run-1.json", run)
		attempts.write("attempts/"+bead+"/result-1.json", res)
	}
	for _, tc := range []struct {
		name   string
		h      *history
		verify bool
	}{{"through", mixed, false}, {"--verify-cache", mixed, true}, {"--verify-cache, every bead with attempts", attempts, true}} {
		h := tc.h
		path := statedir.Dir{Root: h.dir}.ReportCache()
		rc := reportCase{merge: true, attempts: true}
		want := render(t, h.dir, nil, rc)
		// Written without --attempts, so that beads with attempts are cached: with it, their
		// entries are kept as they are (opLeave).
		render(t, h.dir, testCache(h.dir), reportCase{merge: true})
		pageSize, _ := cacheExtent(t, path)
		c := testCache(h.dir)
		c.Verify = tc.verify
		c.opened = func() {
			if err := os.Truncate(path, int64(2*pageSize)); err != nil {
				t.Fatal(err)
			}
		}
		if got := render(t, h.dir, c, rc); got != want {
			t.Fatalf("%s: the cache cut under the scan (%+v): the report differs:\n%s", tc.name, c.Stats, firstDiff(got, want))
		}
		if c.Stats.Unreadable == "" || !strings.Contains(c.Stats.Off, "removed") {
			t.Errorf("%s: the cache cut under the scan: %+v, want it found unreadable and removed", tc.name, c.Stats)
		}
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("%s: the cache cut under the scan is still there", tc.name)
		}
		c = testCache(h.dir)
		if got := render(t, h.dir, c, rc); got != want || c.Stats.Unreadable != "" || c.Stats.Off != "" {
			t.Fatalf("%s: the run after: %+v, want the cache rebuilt quietly:\n%s", tc.name, c.Stats, firstDiff(got, want))
		}
	}
}

// FuzzCacheFile: whatever bytes the cache file holds (seeded with a real cache, cut short and
// whole), a scan through it gives the records' report, and writes a cache the next scan reads.
// A cut cache crashed the process (issue 27, bug 4).
func FuzzCacheFile(f *testing.F) {
	h := newHistory(f, 30)
	h.add(40)
	rc := reportCase{merge: true}
	want := render(f, h.dir, nil, rc)
	path := statedir.Dir{Root: h.dir}.ReportCache()
	render(f, h.dir, testCache(h.dir), rc)
	whole, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	pageSize, need := cacheExtent(f, path)
	for _, at := range []int{len(whole), need, need - 1, 2 * pageSize, pageSize + 100, 100, 0} {
		f.Add(whole[:at])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c := testCache(h.dir)
		if got := render(t, h.dir, c, rc); got != want {
			t.Fatalf("through a cache of %d bytes (%+v): the report differs:\n%s", len(data), c.Stats, firstDiff(got, want))
		}
		c = testCache(h.dir)
		if got := render(t, h.dir, c, rc); got != want || c.Stats.Rebuilt != "" {
			t.Fatalf("the run after (%+v): want the cache written whole:\n%s", c.Stats, firstDiff(got, want))
		}
	})
}

// TestCheckMetas: the meta pages of a cache bbolt wrote check out however it was written;
// cut a byte short of its last page, garbled in either meta page's checksummed bytes, or in both
// pages' headers, they do not. One meta page damaged is a write bbolt was killed in: the other
// is read.
func TestCheckMetas(t *testing.T) {
	h := newHistory(t, 29)
	h.add(100)
	render(t, h.dir, testCache(h.dir), reportCase{})
	path := statedir.Dir{Root: h.dir}.ReportCache()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize, need := cacheExtent(t, path)
	check := func(data []byte) error { return checkMetas(bytes.NewReader(data), int64(len(data))) }
	garble := func(at ...int) []byte {
		b := bytes.Clone(whole)
		for _, i := range at {
			b[i] ^= 0x40
		}
		return b
	}
	for _, c := range []struct {
		what string
		data []byte
		ok   bool
	}{
		{"whole", whole, true},
		{"its pages only", whole[:need], true},
		{"a byte short", whole[:need-1], false},
		{"empty", nil, false},
		{"the first meta's pgid garbled", garble(16 + 40), true},
		{"the second meta's page size garbled", garble(pageSize + 16 + 8), true},
		{"both metas' magic garbled", garble(16, pageSize+16), false},
		{"both metas' page ids garbled", garble(0, pageSize), false},
		{"both metas' checksums garbled", garble(16+56, pageSize+16+56), false},
	} {
		if err := check(c.data); (err == nil) != c.ok {
			t.Errorf("%s: checkMetas = %v, want ok: %v", c.what, err, c.ok)
		}
	}
	// A meta page of a high-water mark past the end, its checksum right: cut short.
	b := bytes.Clone(whole)
	meta := b[boltPageHeader : boltPageHeader+boltMetaLen]
	binary.NativeEndian.PutUint64(meta[40:], uint64(len(whole)/pageSize+1))
	sum := fnv.New64a()
	sum.Write(meta[:boltChecksumAt])
	binary.NativeEndian.PutUint64(meta[boltChecksumAt:], sum.Sum64())
	if err := check(b); !errors.Is(err, errCutShort) {
		t.Errorf("a meta page past the end: checkMetas = %v, want %v", err, errCutShort)
	}
}

// TestCacheFileSuffixes: the suffixes fromCache builds a bead's file names with are the names
// statedir gives its run, result and verification files.
func TestCacheFileSuffixes(t *testing.T) {
	if got, want := "bd-1"+recordFileSuffix, statedir.RecordFile("bd-1"); got != want {
		t.Errorf("record file %q, statedir has %q", got, want)
	}
	if got, want := "bd-1"+verifyFileSuffix, filepath.Base(statedir.Dir{Root: "state"}.Verify("bd-1")); got != want {
		t.Errorf("verification file %q, statedir has %q", got, want)
	}
}

// TestCacheReusing: a scan that takes beads from the cache calls Cache.Reusing with the number of
// record pairs before the first bead, and what it returned after the last; a scan that builds
// the cache calls neither (the main tunes the runtime there: cmd/analyze-runs' tuneForCache).
func TestCacheReusing(t *testing.T) {
	h := newHistory(t, 7)
	h.add(20)
	entries, err := Source{Dir: h.dir}.list()
	if err != nil {
		t.Fatal(err)
	}
	scan := func() (calls []string) {
		c := testCache(h.dir)
		c.Reusing = func(pairs int) func() {
			calls = append(calls, fmt.Sprintf("reusing %d", pairs))
			return func() { calls = append(calls, "done") }
		}
		seen := false
		err := Source{Dir: h.dir, Cache: c, Workers: 2}.Scan(func(*Bead) {
			if !seen {
				seen = true
				calls = append(calls, "bead")
			}
		}, func(Skipped) {})
		if err != nil {
			t.Fatal(err)
		}
		return calls
	}
	if got := scan(); !slices.Equal(got, []string{"bead"}) {
		t.Errorf("building the cache: %q, want no Reusing", got)
	}
	if got, want := scan(), []string{fmt.Sprintf("reusing %d", len(entries)), "bead", "done"}; !slices.Equal(got, want) {
		t.Errorf("through the cache: %q, want %q", got, want)
	}
	if got, want := CacheScanMemory(1000), int64(memoryPerPair*1000); got != want {
		t.Errorf("CacheScanMemory(1000) = %d, want %d", got, want)
	}
}

// TestCacheMapLetGo: a scan through the cache does not keep the cache's memory map resident: the
// walk pairing its entries with the listing lets their pages go as it goes, and the scan maps in
// again only what it reads. It was mapped whole (MAP_POPULATE), 205 MB of a cached million
// pairs' 450 MB peak RSS (issue 22).
func TestCacheMapLetGo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/smaps")
	}
	h := newHistory(t, 12)
	h.add(3000)
	path := statedir.Dir{Root: h.dir}.ReportCache()
	render(t, h.dir, testCache(h.dir), reportCase{})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	resident := int64(-1)
	c := testCache(h.dir)
	err = Source{Dir: h.dir, Cache: c, Workers: 2}.Scan(func(*Bead) {
		if resident < 0 {
			resident = mappedKB(t, path) << 10
		}
	}, func(Skipped) {})
	if err != nil {
		t.Fatal(err)
	}
	if c.Stats.Reused == 0 {
		t.Fatalf("the cache was not used: %+v", c.Stats)
	}
	if testing.Verbose() {
		t.Logf("%d of %d bytes resident", resident, fi.Size())
	}
	if resident > fi.Size()/4 {
		t.Errorf("at the first bead %d of the cache's %d bytes were resident in the scan's map, want a few pages", resident, fi.Size())
	}
}

// mappedKB is the resident size of this process's maps of the file at path, in KiB.
func mappedKB(t *testing.T, path string) int64 {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var kb int64
	in := false
	for _, line := range strings.Split(string(smaps), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			in = fields[len(fields)-1] == path
		case in && len(fields) == 3 && fields[0] == "Rss:":
			n, _ := strconv.ParseInt(fields[1], 10, 64)
			kb += n
		}
	}
	return kb
}

// TestCacheEntryOneAllocation: an entry is built in one allocation (it grew from nil four or
// five times, and its key was copied for its checksum), and read back without any.
func TestCacheEntryOneAllocation(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	b := randomBead(rng)
	e := entry{name: "bd-1", run: true, result: true, verify: true}
	ids := fileIDs{run: randomID(rng), result: randomID(rng), verify: randomID(rng)}
	if allocs := testing.AllocsPerRun(10, func() { entryValue(e, &ids, b) }); allocs != 1 {
		t.Errorf("an entry took %.0f allocations, want 1", allocs)
	}
	v := entryValue(e, &ids, b)
	if allocs := testing.AllocsPerRun(10, func() { unseal(e.name, v) }); allocs != 0 {
		t.Errorf("checking an entry's checksum took %.0f allocations, want none", allocs)
	}
}

// TestCacheBuildCountsInWorkers: a scan that builds the cache for a report of every bead
// (Source.Merge) counts each chunk whose totals it writes on the worker that read it, and
// merges them: the beads of those chunks are not emitted (they were counted twice, once in the
// chunk's totals and once by the report), and the report is the records'.
func TestCacheBuildCountsInWorkers(t *testing.T) {
	h := newHistory(t, 14)
	h.add(300)
	want := render(t, h.dir, nil, reportCase{merge: true})
	agg := NewAggregator("")
	emitted, beads := 0, 0
	err := Source{Dir: h.dir, Cache: testCache(h.dir), Workers: 3, Merge: agg.Merge}.Scan(func(b *Bead) { emitted++; agg.Add(b) }, func(Skipped) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := (Source{Dir: h.dir}).Scan(func(*Bead) { beads++ }, func(Skipped) {}); err != nil {
		t.Fatal(err)
	}
	if emitted > beads*3/4 {
		t.Errorf("building the cache emitted %d of %d beads, want most counted in their chunks' totals", emitted, beads)
	}
	os.Remove(statedir.Dir{Root: h.dir}.ReportCache())
	if got := render(t, h.dir, testCache(h.dir), reportCase{merge: true}); got != want {
		t.Errorf("a report building the cache differs from the records':\n%s", firstDiff(got, want))
	}
}

// TestCacheBeadDecodeAllocations: a bead decoded from the cache into a place of its job's slab
// costs one allocation (its name and times, one string), two with a run's own duration; a bead
// with no slab one more. They were a bead, each of the three texts and the duration: five.
func TestCacheBeadDecodeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops the intern tables at random")
	}
	rng := rand.New(rand.NewSource(3))
	var b *Bead
	for b == nil || b.RunSeconds == nil || b.ID == "" || b.StartedAt == "" || b.FinishedAt == "" {
		b = randomBead(rng)
	}
	e := entry{name: "bd-1", run: true}
	body, ok := unseal(e.name, entryValue(e, &fileIDs{}, b))
	if !ok {
		t.Fatal("the entry does not unseal")
	}
	decode := func(into *Bead) *Bead {
		d := decoder{b: body}
		d.byte()
		d.fileID()
		got := d.bead(into)
		if !d.end() {
			t.Fatal("the entry does not decode")
		}
		return got
	}
	if got := decode(nil); !reflect.DeepEqual(got, b) {
		t.Fatalf("decoded %+v, want %+v", got, b)
	}
	slab := newBeadSlab(100)
	if allocs := testing.AllocsPerRun(20, func() { decode(slab.next()) }); allocs > 2 {
		t.Errorf("a bead decoded into a slab took %.0f allocations, want 2", allocs)
	}
	if allocs := testing.AllocsPerRun(20, func() { decode(nil) }); allocs > 3 {
		t.Errorf("a bead decoded took %.0f allocations, want 3", allocs)
	}
}
