//go:build race

package main

// queueRace: the race detector slows every process several times over; the crash test runs a
// smaller plan under it.
const queueRace = true
