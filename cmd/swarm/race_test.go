//go:build race

package main

// raceEnabled: the race detector slows every swarm process several times over.
const raceEnabled = true
