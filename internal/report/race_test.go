//go:build race

package report

// raceEnabled is set when the tests run with the race detector, under which sync.Pool drops
// what it is given at random: the allocation counts skip then.
const raceEnabled = true
