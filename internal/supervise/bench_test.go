package supervise

import (
	"context"
	"io"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// spewScript prints $1 MiB as fast as awk can, in 64-byte lines: cmd/dispatch/testdata/agent.sh's
// SPEW, without the rest of the stand-in.
const spewScript = `awk -v mb="$1" 'BEGIN {
  line = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
  body = line; while (length(body) < 1048576) body = body body
  body = substr(body, 65)
  for (b = 0; b < mb; b++) printf "spew %09d ................................................\n%s", b, body
}'`

// BenchmarkRelay runs an agent that prints BENCH_RELAY_MB MiB (default 256) through a
// supervisor in this process, on a terminal and on pipes, the console discarded as without
// tmux: the relay's own cost, for `go test -cpuprofile` and `-memprofile` to take apart (the
// dispatch benchmark of the same name measures the whole supervisor process). It reports the
// relay's pace and this process's CPU time per MiB, user and system apart.
func BenchmarkRelay(b *testing.B) {
	mb := 256
	if v := os.Getenv("BENCH_RELAY_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("BENCH_RELAY_MB=%q: want a whole number of MiB, at least 1", v)
		}
		mb = n
	}
	for _, terminal := range []bool{true, false} {
		name := map[bool]string{true: "pty", false: "pipe"}[terminal]
		b.Run(name, func(b *testing.B) {
			s := &Supervisor{Layout: Layout{Dir: b.TempDir()}, Tool: "bench", Name: "relay", Backend: BackendProcess,
				Console: io.Discard}
			if err := s.Open(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ReportAllocs()
			b.SetBytes(int64(mb) << 20)
			var user, sys time.Duration
			for i := 0; i < b.N; i++ {
				a := &Attempt{Name: s.Name, Number: i + 1, Dir: s.Layout.Dir,
					Argv: []string{"/bin/sh", "-c", spewScript, "spew", strconv.Itoa(mb)}, Env: os.Environ(),
					Terminal: terminal, KillGrace: time.Second, LogPath: s.Layout.LogPath(s.Name)}
				u0, s0 := selfCPU()
				out := s.Run(context.Background(), a, &memRecorder{})
				u1, s1 := selfCPU()
				user, sys = user+u1-u0, sys+s1-s0
				b.StopTimer()
				if out.Status != StatusDone {
					b.Fatalf("the agent: %s (%s)", out.Status, out.Reason)
				}
				if st, err := os.Stat(a.LogPath); err != nil || st.Size() != int64(mb)<<20 {
					b.Fatalf("the log: %v, %v; want %d bytes", st.Size(), err, int64(mb)<<20)
				}
				os.Remove(a.LogPath)
				b.StartTimer()
			}
			perMiB := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N*mb) }
			b.ReportMetric(perMiB(user), "user-ms/MiB")
			b.ReportMetric(perMiB(sys), "sys-ms/MiB")
		})
	}
}

// selfCPU is this process's user and system CPU time so far.
func selfCPU() (user, sys time.Duration) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // fails only for a bad argument
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
