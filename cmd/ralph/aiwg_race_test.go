//go:build race

package main

// aiwgRace is set under -race, where every process is several times slower: the long AIWG
// scripts do fewer trials.
const aiwgRace = true
