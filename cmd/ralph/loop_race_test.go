//go:build race

package main

// loopRace: the race detector slows the loop tests' binaries several times; TestControlWins
// runs fewer trials under it.
const loopRace = true
