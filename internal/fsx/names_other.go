//go:build !linux

package fsx

import "strings"

// SuffixNames lists the names in dir that end in suffix, are not hidden and have something
// before the suffix, without the suffix, sorted (the listing made for a million names is
// Linux's: names_linux.go).
func SuffixNames(dir, suffix string) ([]string, error) {
	return Names(dir, func(n string) (string, bool) {
		name, ok := strings.CutSuffix(n, suffix)
		return name, ok && name != "" && !strings.HasPrefix(n, ".")
	})
}
