package audit_test

// Benchmarks of the audit engine on synthetic state directories: the throughput validate-state
// gets on `--all` (scripts/bench/validate-state.sh times the command itself against ajv-cli).
//
//	go test ./internal/audit -run '^$' -bench AuditRun -benchtime 3x
//	go test ./internal/audit -run '^$' -bench 'AuditRun/100000pairs' -benchtime 3x -cpuprofile cpu.out
//
// The records are generated once per size, when a benchmark of that size first runs, into the
// benchmark's temporary directory, or into $AUDIT_BENCH_DIR/<n>pairs when that is set (kept and
// reused across runs and benchmarks: 100,000 pairs take some 10 s to write). BenchmarkReadFloor reads the same files and does nothing
// else: the I/O floor the engine cannot beat.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/fleet/internal/audit"
	"github.com/agentfleet/fleet/internal/benchdata"
)

// benchSizes are the pair counts benchmarked; each pair is two files (a run and its result).
var benchSizes = []int{1000, 10000, 100000}

// benchInvalidPct is the share of run records made schema-invalid, as genrecords -invalid does.
const benchInvalidPct = 5

// userSchemas is the directory of the schemas users keep (JSON Schema 2020-12), which the
// command is benchmarked with; when the shared corpus is absent the embedded schemas are used.
func userSchemas() string {
	dir := filepath.Join("..", "..", "..", "shared", "compat", "schemas")
	if _, err := os.Stat(filepath.Join(dir, "run.schema.json")); err != nil {
		return ""
	}
	return dir
}

func BenchmarkAuditRun(b *testing.B) {
	root := b.TempDir() // lives until every sub-benchmark is done
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("%dpairs", n), func(b *testing.B) {
			dir := benchState(b, root, n)
			a, _, err := audit.New(audit.Options{SchemaDir: userSchemas(), StateDir: dir}, []string{"run", "result"})
			if err != nil {
				b.Fatal(err)
			}
			targets := []audit.Target{
				{Path: filepath.Join(dir, "runs"), Kind: "run"},
				{Path: filepath.Join(dir, "results"), Kind: "result"},
			}
			b.ReportAllocs()
			b.ResetTimer()
			var files, valid int
			for i := 0; i < b.N; i++ {
				files, valid = 0, 0
				a.Run(targets, func(r audit.Report) {
					files++
					if r.Valid {
						valid++
					}
				})
			}
			b.StopTimer()
			if files != 2*n {
				b.Fatalf("checked %d files, want %d", files, 2*n)
			}
			if valid == 0 || valid == files {
				b.Fatalf("%d of %d files valid: the generated records are not what the benchmark expects", valid, files)
			}
			reportFiles(b, files)
		})
	}
}

// BenchmarkReadFloor reads every file of the state directory on as many goroutines as the
// auditor uses, and does nothing with the bytes: what listing and reading alone cost.
func BenchmarkReadFloor(b *testing.B) {
	root := b.TempDir()
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("%dpairs", n), func(b *testing.B) {
			dir := benchState(b, root, n)
			b.ResetTimer()
			var files int
			for i := 0; i < b.N; i++ {
				var paths []string
				for _, sub := range []string{"runs", "results"} {
					ents, err := os.ReadDir(filepath.Join(dir, sub))
					if err != nil {
						b.Fatal(err)
					}
					for _, e := range ents {
						paths = append(paths, filepath.Join(dir, sub, e.Name()))
					}
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				for w := 0; w < 2*runtime.GOMAXPROCS(0); w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for j := int(next.Add(1)) - 1; j < len(paths); j = int(next.Add(1)) - 1 {
							if _, err := os.ReadFile(paths[j]); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				files = len(paths)
			}
			b.StopTimer()
			reportFiles(b, files)
		})
	}
}

// BenchmarkValidate checks one full run record held in memory: the schema's share of the cost.
func BenchmarkValidate(b *testing.B) {
	a, _, err := audit.New(audit.Options{SchemaDir: userSchemas()}, []string{"run"})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := generateRecords(dir, 20, 0); err != nil {
		b.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(dir, "runs", "bd-000002.json")) // a full record
	if err != nil {
		b.Fatal(err)
	}
	s := a.Schema("run")
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Validate(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func reportFiles(b *testing.B, files int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(files)*float64(b.N)/s, "files/s")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(files), "ns/file")
}

// benchState returns a state directory with n generated record pairs under root (a parent
// benchmark's temporary directory), or under $AUDIT_BENCH_DIR when that is set, writing it on
// first use. A sub-benchmark's function runs several times as b.N grows; the .complete marker
// makes the later calls reuse the files.
func benchState(b *testing.B, root string, n int) string {
	b.Helper()
	if env := os.Getenv("AUDIT_BENCH_DIR"); env != "" {
		root = env
	}
	dir := filepath.Join(root, fmt.Sprintf("%dpairs", n))
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return dir
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	if err := generateRecords(dir, n, benchInvalidPct); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".complete"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// generateRecords writes n run and result record pairs into dir, the same files tools/genrecords
// writes with -seed 1 -legacy 10 -invalid invalidPct.
func generateRecords(out string, n, invalidPct int) error {
	return benchdata.Generate(n, out, 1, 10, invalidPct)
}
