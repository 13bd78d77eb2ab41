// Command genrecords writes a synthetic state directory of run and result record pairs for the
// benchmarks (see internal/benchdata).
//
//	go run ./tools/genrecords -n 10000 -out /tmp/state [-seed 1] [-legacy 10] [-invalid 0] [-start 0]
//
// -start N numbers the pairs from N: -start 1000000 -n 10000 adds 1% to a set of a million.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/agentfleet/fleet/internal/benchdata"
)

func main() {
	n := flag.Int("n", 1000, "number of record pairs")
	out := flag.String("out", "state", "state directory to write runs/ and results/ into")
	seed := flag.Int64("seed", 1, "random seed")
	legacy := flag.Int("legacy", 10, "percent of pairs in the legacy minimal form")
	invalid := flag.Int("invalid", 0, "percent of run records made schema-invalid")
	start := flag.Int("start", 0, "number of the first pair (to add pairs to a set of that many)")
	flag.Parse()
	if err := benchdata.GenerateFrom(*start, *n, *out, *seed, *legacy, *invalid); err != nil {
		fmt.Fprintln(os.Stderr, "genrecords:", err)
		os.Exit(1)
	}
}
