package fsx

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// TestSortNames: SortNames orders as slices.Sort does, on names sharing long prefixes, short
// ones, empty ones, duplicates and bytes above 0x7f, below and above radixMin.
func TestSortNames(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 7, radixMin - 1, radixMin, 5000, 100000} {
		names := make([]string, n)
		for i := range names {
			switch rng.Intn(6) {
			case 0:
				names[i] = fmt.Sprintf("bd-%06d", rng.Intn(n+1))
			case 1:
				names[i] = fmt.Sprintf("bead-long-prefix-%x", rng.Int63())
			case 2:
				b := make([]byte, rng.Intn(10))
				for j := range b {
					b[j] = byte(1 + rng.Intn(255))
				}
				names[i] = string(b)
			case 3:
				names[i] = fmt.Sprintf("bd-%d", rng.Intn(1000))
			case 4:
				names[i] = fmt.Sprintf("%x", rng.Intn(1<<20))
			default:
				names[i] = "bd-00000" + string(rune('a'+rng.Intn(3)))
			}
		}
		want := slices.Clone(names)
		slices.Sort(want)
		SortNames(names)
		if !slices.Equal(names, want) {
			t.Fatalf("SortNames of %d names differs from slices.Sort", n)
		}
	}
}

// TestSortNamesCommonPrefix: names that all share a prefix (every bead name beginning "bd-") are
// ordered by what follows it, the prefix itself, a NUL after it and names ten bytes past it
// included.
func TestSortNamesCommonPrefix(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, prefix := range []string{"bd-", "bead-long-prefix-of-twenty-", "x"} {
		names := make([]string, 3*radixMin)
		for i := range names {
			switch rng.Intn(5) {
			case 0:
				names[i] = prefix
			case 1:
				names[i] = prefix + "\x00" + fmt.Sprint(rng.Intn(10))
			case 2:
				names[i] = fmt.Sprintf("%s%06d", prefix, rng.Intn(len(names)))
			case 3:
				names[i] = fmt.Sprintf("%s%016d-%d", prefix, rng.Intn(10), rng.Intn(100))
			default:
				names[i] = fmt.Sprintf("%s%d", prefix, rng.Intn(1000))
			}
		}
		want := slices.Clone(names)
		slices.Sort(want)
		SortNames(names)
		if !slices.Equal(names, want) {
			t.Fatalf("SortNames of names beginning %q differs from slices.Sort", prefix)
		}
	}
}

func BenchmarkSortNames(b *testing.B) {
	names := make([]string, 1000000)
	for i := range names {
		names[i] = fmt.Sprintf("bd-%06d", i)
	}
	rand.New(rand.NewSource(1)).Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, sorter := range []struct {
		name string
		sort func([]string)
	}{{"radix", SortNames}, {"slices.Sort", slices.Sort[[]string]}} {
		b.Run(sorter.name, func(b *testing.B) {
			for b.Loop() {
				s := slices.Clone(names)
				sorter.sort(s)
			}
		})
	}
}
