//go:build race

package main

// raceEnabled is set when the tests run with the race detector, which multiplies memory: the
// peak RSS checks skip then.
const raceEnabled = true
