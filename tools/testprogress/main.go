// Command testprogress runs go test and prints what plain go test prints (a line per package:
// ok, FAIL or no test files; the output of every test that failed), as the packages end,
// with a line of progress every -every while packages run: each package still running, how
// long it has run, how many of its tests have ended and, once one has run a minute, its test
// that has run longest (one that hangs is named while it hangs). The longest packages run for
// minutes with nothing to show otherwise. It exits with go test's status. make test runs it.
//
// A package that fails shows all it printed, the output of the tests that never ended too: a
// timeout's panic and its goroutines' stacks (go test -json gives them to the test that ran
// last), which plain go test shows. At the end: the tests that skipped and why (a missing tool
// is seen, not silent), the failures by name, and one line: packages, tests, time, verdict.
// Then it kills what the tests left running (sweep: go test's timeout ends a test binary with no
// cleanup): go test runs with FLEET_TEST_MARK set, which every process it starts inherits.
//
//	go run ./tools/testprogress [-every 30s] [--] GO-TEST-FLAGS... PACKAGES...
//
// It runs go test -json and reads its events (go doc cmd/test2json): output as it comes, so
// a package's line shows when that package ends, not after the ones before it in the list.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/testenv/sweep"
)

// event is a test2json event.
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Elapsed    float64
	Output     string
}

func main() {
	every := flag.Duration("every", 30*time.Second, "how often to print the progress line (0: never)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: testprogress [-every D] [--] GO-TEST-FLAGS... PACKAGES...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	os.Exit(run(flag.Args(), *every, os.Stdout, os.Stderr))
}

func run(args []string, every time.Duration, stdout, stderr io.Writer) int {
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.Command(goBin, append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = stderr
	mark := sweep.NewMark("")
	cmd.Env = append(os.Environ(), sweep.Var+"="+mark)
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testprogress: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testprogress: %v\n", err)
		return 1
	}
	// An interrupt reaches go test through the terminal's process group; testprogress waits
	// for it to end and print what it prints.
	signal.Ignore(syscall.SIGINT)

	r := newReport(stdout, stderr)
	if mod, err := exec.Command(goBin, "list", "-m").Output(); err == nil {
		r.module = strings.TrimSpace(string(mod)) + "/" // the progress line names packages without it
	}
	if every > 0 {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case now := <-t.C:
					r.progress(now)
				}
			}
		}()
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		r.line(sc.Bytes())
	}
	err = cmd.Wait()
	r.summary(err == nil)
	if killed := sweep.Kill(mark); len(killed) > 0 {
		fmt.Fprintf(stdout, "testprogress: killed %d processes the tests left running:\n", len(killed))
		for _, p := range killed {
			fmt.Fprintf(stdout, "    %s\n", p)
		}
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		fmt.Fprintf(stderr, "testprogress: %v\n", err)
		return 1
	}
}

// pkg is a package whose tests run.
type pkg struct {
	start   time.Time
	ended   int                  // tests and subtests that passed, failed or were skipped
	failed  []string             // tests that failed
	output  map[string][]string  // test ("" for the package) -> its output, until it passes
	order   []string             // the tests of output, in the order they first printed
	running map[string]time.Time // test -> since when it runs (a parallel test: since cont)
}

// slowAfter is how long a test runs before the progress line names it.
const slowAfter = time.Minute

// slowest is the test of p that has run longest, among those none of whose subtests runs (a
// parent runs as long as its subtests), and for how long; "" when none has run slowAfter.
func (p *pkg) slowest(now time.Time) (string, time.Duration) {
	name, longest := "", time.Duration(0)
	for t, since := range p.running {
		if d := now.Sub(since); !p.subtestRuns(t) && d >= slowAfter && (d > longest || d == longest && t < name) {
			name, longest = t, d
		}
	}
	return name, longest
}

type report struct {
	mu       sync.Mutex
	stdout   io.Writer
	stderr   io.Writer
	begun    time.Time
	module   string // "" or the module's path and a slash
	started  bool   // a package's tests have started
	running  map[string]*pkg
	failures []string // "pkg test"
	packages int      // packages whose tests ended
	tests    int      // tests and subtests that passed, failed or were skipped
	skips    []skip
}

// skip is a test that skipped, and why (the last line it printed).
type skip struct{ pkg, test, why string }

func newReport(stdout, stderr io.Writer) *report {
	return &report{stdout: stdout, stderr: stderr, begun: time.Now(), running: map[string]*pkg{}}
}

// line takes one line of go test -json's output; a line that is not an event is shown as is.
func (r *report) line(b []byte) {
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
		r.mu.Lock()
		fmt.Fprintf(r.stdout, "%s\n", b)
		r.mu.Unlock()
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Action {
	case "build-output":
		io.WriteString(r.stderr, e.Output)
		return
	case "build-fail":
		return
	}
	p := r.running[e.Package]
	if p == nil {
		p = &pkg{start: e.Time, output: map[string][]string{}, running: map[string]time.Time{}}
		r.started = true
		if p.start.IsZero() {
			p.start = time.Now()
		}
		r.running[e.Package] = p
	}
	switch e.Action {
	case "run", "cont":
		if e.Test != "" {
			p.running[e.Test] = e.Time
		}
	case "pause":
		delete(p.running, e.Test)
	case "output":
		if e.Test == "" || !chatter(e.Output) {
			if _, ok := p.output[e.Test]; !ok && e.Test != "" {
				p.order = append(p.order, e.Test)
			}
			p.output[e.Test] = append(p.output[e.Test], e.Output)
		}
	case "pass", "skip":
		if e.Test == "" {
			r.packageEnded(e.Package, p, false)
			return
		}
		p.ended++
		r.tests++
		if e.Action == "skip" {
			r.skips = append(r.skips, skip{e.Package, e.Test, skipReason(p.output[e.Test])})
		}
		delete(p.output, e.Test)
		delete(p.running, e.Test)
	case "fail":
		if e.Test == "" {
			r.packageEnded(e.Package, p, true)
			return
		}
		p.ended++
		r.tests++
		delete(p.running, e.Test)
		if !failedUnder(p.failed, e.Test) { // a parent whose subtest failed is not listed again
			r.failures = append(r.failures, e.Package+" "+e.Test)
		}
		p.failed = append(p.failed, e.Test)
		for _, o := range p.output[e.Test] {
			io.WriteString(r.stdout, o)
		}
		delete(p.output, e.Test)
	}
}

// failedUnder reports whether one of failed is a subtest of test.
func failedUnder(failed []string, test string) bool {
	for _, f := range failed {
		if strings.HasPrefix(f, test+"/") {
			return true
		}
	}
	return false
}

// chatter is a line go test -json adds to a test's output that plain go test does not show.
func chatter(s string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(strings.TrimLeft(s, " "), p) {
			return true
		}
	}
	return false
}

// skipReason is why a test skipped: the last line a t.Skip (or t.Log) wrote, "file.go:N: why",
// without its file and line, testscript's log of the script left out (a script's skip comes
// before it); else the last line it printed before "--- SKIP"; trimmed.
func skipReason(output []string) string {
	last := ""
	for i := len(output) - 1; i >= 0; i-- {
		s := strings.TrimSpace(output[i])
		if last == "" && s != "" && !strings.HasPrefix(s, "--- SKIP") {
			last = s
		}
		if loc := goLogLine.FindString(s); loc != "" && !strings.HasPrefix(s, "testscript.go:") {
			return strings.TrimPrefix(s, loc)
		}
	}
	if last == "" {
		return "(no reason given)"
	}
	return last
}

// goLogLine is the start of a line a test logged: its file and line.
var goLogLine = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.go:[0-9]+: `)

// packageEnded prints the package's own output: its ok line; when it failed, the output of its
// tests that never ended (a timeout's panic and the goroutines' stacks go to the test that ran
// last) and everything it printed outside its tests (a panic, a race report, the FAIL lines);
// the sweep's lines always (a test left processes running).
func (r *report) packageEnded(name string, p *pkg, failed bool) {
	delete(r.running, name)
	r.packages++
	if failed {
		for _, t := range p.order {
			for _, o := range p.output[t] {
				io.WriteString(r.stdout, o)
			}
		}
		for _, t := range p.unended() {
			r.failures = append(r.failures, name+" "+t+" (did not end)")
		}
	}
	for _, o := range p.output[""] {
		if failed || summaryLine(o) || strings.HasPrefix(o, "sweep: ") {
			io.WriteString(r.stdout, o)
		}
	}
	if failed && len(p.failed) == 0 && len(p.unended()) == 0 {
		r.failures = append(r.failures, name)
	}
}

// unended are the tests still running, none of whose subtests is (a parent runs as long as
// its subtests), sorted.
func (p *pkg) unended() []string {
	var names []string
	for t := range p.running {
		if !p.subtestRuns(t) {
			names = append(names, t)
		}
	}
	sort.Strings(names)
	return names
}

// subtestRuns reports whether a subtest of t runs.
func (p *pkg) subtestRuns(t string) bool {
	for u := range p.running {
		if strings.HasPrefix(u, t+"/") {
			return true
		}
	}
	return false
}

// summaryLine is go test's line for a package that ended: "ok", "?" or "FAIL", the package.
func summaryLine(s string) bool {
	return strings.HasPrefix(s, "ok  \t") || strings.HasPrefix(s, "?   \t") || strings.HasPrefix(s, "FAIL\t")
}

// progress prints the packages still running, the longest running first; before the first
// has started, that go test is building them (a minute or two with an empty build cache).
func (r *report) progress(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.running) == 0 {
		if !r.started {
			fmt.Fprintf(r.stderr, "... %s: building the tests\n", round(now.Sub(r.begun)))
		}
		return
	}
	names := make([]string, 0, len(r.running))
	for n := range r.running {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := r.running[names[i]], r.running[names[j]]
		if !a.start.Equal(b.start) {
			return a.start.Before(b.start)
		}
		return names[i] < names[j]
	})
	var parts []string
	for _, n := range names {
		p := r.running[n]
		s := fmt.Sprintf("%s (%s, %d tests ended", strings.TrimPrefix(n, r.module), round(now.Sub(p.start)), p.ended)
		if len(p.failed) > 0 {
			s += fmt.Sprintf(", %d failed", len(p.failed))
		}
		if t, d := p.slowest(now); t != "" {
			s += fmt.Sprintf("; %s for %s", t, round(d))
		}
		parts = append(parts, s+")")
	}
	fmt.Fprintf(r.stderr, "... %s: running %s\n", round(now.Sub(r.begun)), strings.Join(parts, ", "))
}

// summary lists, after everything, the tests that skipped (a package's tests skipped for one
// reason on one line), the tests that failed, once more, and ends with one line: packages,
// tests, time and the verdict, the failures by name. passed is go test's status.
func (r *report) summary(passed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	took := round(time.Since(r.begun))
	if len(r.skips) > 0 {
		fmt.Fprintf(r.stdout, "\nskipped (%d):\n", len(r.skips))
		for _, s := range r.groupedSkips() {
			fmt.Fprintf(r.stdout, "    %s\n", s)
		}
	}
	if len(r.failures) > 0 {
		fmt.Fprintf(r.stdout, "\nfailed (%s):\n", took)
		for _, f := range r.failures {
			fmt.Fprintf(r.stdout, "    %s\n", f)
		}
	}
	verdict := "all passed"
	switch {
	case len(r.failures) > 0:
		short := make([]string, len(r.failures))
		for i, f := range r.failures {
			short[i] = strings.TrimPrefix(f, r.module)
		}
		verdict = fmt.Sprintf("FAILED %d: %s", len(r.failures), strings.Join(short, ", "))
	case !passed:
		verdict = "FAILED (go test failed: see above)"
	}
	fmt.Fprintf(r.stdout, "\ntests: %d packages, %d tests, %d skipped, in %s: %s\n", r.packages, r.tests, len(r.skips), took, verdict)
}

// groupedSkips are the skips as lines, one per package and reason: "pkg: reason (TestA, TestB)",
// at most 3 names and how many more.
func (r *report) groupedSkips() []string {
	type key struct{ pkg, why string }
	var keys []key
	tests := map[key][]string{}
	for _, s := range r.skips {
		k := key{s.pkg, s.why}
		if _, ok := tests[k]; !ok {
			keys = append(keys, k)
		}
		tests[k] = append(tests[k], s.test)
	}
	lines := make([]string, len(keys))
	for i, k := range keys {
		names := tests[k]
		list := strings.Join(names[:min(3, len(names))], ", ")
		if len(names) > 3 {
			list += fmt.Sprintf(" and %d more", len(names)-3)
		}
		lines[i] = fmt.Sprintf("%s: %s (%s)", strings.TrimPrefix(k.pkg, r.module), k.why, list)
	}
	return lines
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }
