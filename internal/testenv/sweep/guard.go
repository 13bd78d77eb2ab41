package sweep

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TestingM is what a TestMain runs: *testing.M, or what testscript.Main takes.
type TestingM interface{ Run() int }

// Guard is m, run under a mark of its own and a watchdog: TestMain calls
// os.Exit(sweep.Guard(m).Run()), or testscript.Main(sweep.Guard(m), ...).
//
// Run marks this binary's processes (Var, below the run's mark when testprogress set one) and
// runs the tests; at the end it kills what they left running, named on stderr. Its watchdog
// fires a margin before go test's -timeout (which panics: no t.Cleanup runs, and what the test
// started runs on for good): it prints every goroutine's stack (the tests' among them: what
// each waits for), kills the marked processes, and ends the binary with status 2.
func Guard(m TestingM) TestingM { return guarded{m} }

type guarded struct{ m TestingM }

func (g guarded) Run() int {
	mark := ownMark()
	if !flag.Parsed() {
		flag.Parse() // m.Run parses them too; -test.timeout is wanted before
	}
	if timeout := testTimeout(); timeout > 0 {
		w := time.AfterFunc(timeout-margin(timeout), func() { timedOut(os.Stderr, timeout, mark) })
		defer w.Stop()
	}
	code := g.m.Run()
	if killed := Kill(mark); len(killed) > 0 {
		fmt.Fprintf(os.Stderr, "sweep: killed %d processes the tests left running: %s\n", len(killed), names(killed))
	}
	return code
}

// ownerVar names the process a mark was made for: the pid, which exec keeps.
const ownerVar = "FLEET_TEST_MARK_OWNER"

// ownMark is this binary's mark, in its environment. What it marks are the processes the
// libraries under test start (tmux servers, detached supervisors, agents), which inherit the
// environment without any library knowing of tests. So the first time, the binary executes
// itself again (same pid, same arguments) with a fresh mark below the one it was given, handed
// to exec as its environment rather than set into the running process; the second time the
// owner variable names this pid, and the mark is the one it was given. A child the tests start
// from this binary (another pid) makes a mark of its own below it the same way.
func ownMark() string {
	mark := os.Getenv(Var)
	if os.Getenv(ownerVar) == strconv.Itoa(os.Getpid()) {
		return mark
	}
	// The given ones are left out: of a name given twice, Go's Getenv reads the first.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, Var+"=") && !strings.HasPrefix(kv, ownerVar+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, Var+"="+NewMark(mark), ownerVar+"="+strconv.Itoa(os.Getpid()))
	err := syscall.Exec("/proc/self/exe", os.Args, env)
	panic(fmt.Sprintf("sweep: executing the test binary again with its mark: %v", err))
}

// margin is how long before go test's timeout the watchdog fires: long enough to print the
// stacks and kill (the race detector slows both), short against the timeout.
func margin(timeout time.Duration) time.Duration {
	return min(timeout/10, 20*time.Second)
}

// testTimeout is -test.timeout (go test passes its -timeout, 10 minutes unless told); 0 when
// unset.
func testTimeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return 0
	}
	d, _ := g.Get().(time.Duration)
	return d
}

// atTimeout are the cleanups the watchdog runs before it kills the marked processes: for what
// a mark does not reach (AtTimeout).
var atTimeout struct {
	sync.Mutex
	next int
	fs   map[int]func()
}

// AtTimeout has the watchdog run f if the tests time out, for what the environment's mark
// does not reach: sshlab's hosts run their sessions in an environment of sshd's making, in
// network namespaces that outlive the test. The returned func forgets f (the test's own
// cleanup ran).
func AtTimeout(f func()) (forget func()) {
	atTimeout.Lock()
	defer atTimeout.Unlock()
	if atTimeout.fs == nil {
		atTimeout.fs = map[int]func(){}
	}
	id := atTimeout.next
	atTimeout.next++
	atTimeout.fs[id] = f
	return func() {
		atTimeout.Lock()
		defer atTimeout.Unlock()
		delete(atTimeout.fs, id)
	}
}

// runAtTimeout runs the cleanups AtTimeout registered, each for 20 s at most (one that hangs
// must not hold the rest, nor the sweep).
func runAtTimeout() {
	atTimeout.Lock()
	fs := make([]func(), 0, len(atTimeout.fs))
	for _, f := range atTimeout.fs {
		fs = append(fs, f)
	}
	atTimeout.Unlock()
	for _, f := range fs {
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
		}
	}
}

// timedOut is the watchdog: the stacks, the sweep, the end. Its first line starts as go test's
// own ("panic: test timed out"), which tools/testprogress looks for.
func timedOut(w io.Writer, timeout time.Duration, mark string) {
	fmt.Fprintf(w, "panic: test timed out: still running %v before go test's -timeout %v; the goroutines:\n\n%s\n",
		margin(timeout), timeout, stacks())
	runAtTimeout()
	killed := Kill(mark)
	fmt.Fprintf(w, "sweep: killed %d processes the tests started: %s\n", len(killed), names(killed))
	os.Exit(2)
}

// stacks is every goroutine's stack.
func stacks() []byte {
	for n := 1 << 20; ; n *= 2 {
		b := make([]byte, n)
		if k := runtime.Stack(b, true); k < n || n >= 64<<20 {
			return b[:k]
		}
	}
}

func names(ps []Proc) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = "[" + p.String() + "]"
	}
	return strings.Join(s, " ")
}
