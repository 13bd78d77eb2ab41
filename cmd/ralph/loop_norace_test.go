//go:build !race

package main

// loopRace: see loop_race_test.go.
const loopRace = false
