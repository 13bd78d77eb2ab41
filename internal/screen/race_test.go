//go:build race

package screen

// raceEnabled: heap figures mean nothing under the race detector, which allocates beside
// every allocation, and the memory tests take minutes there.
const raceEnabled = true
