//go:build !race

package main

const aiwgRace = false
