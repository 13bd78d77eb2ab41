//go:build linux

package fsx

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSuffixNames: SuffixNames lists what Names with a pick cutting the suffix lists (hidden
// names, the suffix alone, other suffixes and a suffix followed by more left out), sorted, with
// directory entries read a few at a time or all at once.
func TestSuffixNames(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 3000; i++ {
		var name string
		switch rng.Intn(8) {
		case 0:
			name = fmt.Sprintf("bd-%06x.json", rng.Intn(1<<24))
		case 1:
			name = fmt.Sprintf("bd-%06x-verify.json", rng.Intn(1<<24))
		case 2:
			name = fmt.Sprintf(".bd-%06x.json.tmp", rng.Intn(1<<24))
		case 3:
			name = fmt.Sprintf("bd-%06x.json.lock", rng.Intn(1<<24))
		case 4:
			name = fmt.Sprintf(".hidden-%d.json", rng.Intn(1000))
		case 5:
			name = fmt.Sprintf("bead-with-a-long-common-prefix-%d.json", rng.Intn(100000))
		case 6:
			name = fmt.Sprintf("bd-%d", rng.Intn(1000))
		default:
			name = fmt.Sprintf("x%c%d.json", 'a'+rng.Intn(26), rng.Intn(10))
		}
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{".json", "a.json", "a.jsonx", "ajson", "b.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := Names(dir, func(n string) (string, bool) {
		name, ok := strings.CutSuffix(n, ".json")
		return name, ok && name != "" && !strings.HasPrefix(n, ".")
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{512, 4096, direntBuf} {
		got, err := suffixNames(dir, ".json", size)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("buffer %d: SuffixNames listed %d names, not the %d Names lists (first: %.5q, want %.5q)", size, len(got), len(want), got, want)
		}
	}
	if _, err := SuffixNames(filepath.Join(dir, "none"), ".json"); !os.IsNotExist(err) {
		t.Fatalf("a missing directory: %v, want an error of os.ErrNotExist", err)
	}
	if got, err := SuffixNames(t.TempDir(), ".json"); err != nil || len(got) != 0 {
		t.Fatalf("an empty directory: %q, %v", got, err)
	}
}

// TestSuffixNamesAllocations: a listing costs a few allocations, however many names it has,
// not one or more a name (os.File.Readdirnames: 85 MB and 1.3 s of CPU for a million, issue 22).
func TestSuffixNamesAllocations(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 2000; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("bd-%06d.json", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(3, func() {
		if names, err := SuffixNames(dir, ".json"); err != nil || len(names) != 2000 {
			t.Fatalf("%d names, %v", len(names), err)
		}
	})
	if allocs > 50 {
		t.Fatalf("listing 2000 names made %.0f allocations, want a few", allocs)
	}
}
