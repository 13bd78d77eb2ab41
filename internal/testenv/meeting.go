package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/git"
)

// MeetingFilter commits to the repository at repo a file, slow.txt, whose checkout runs a smudge
// filter that waits (up to 20 s) for another checkout's filter to be running at the same time.
// Each filter writes what it saw to a record: "other" when it met another, "none" when it waited
// out its bound alone. Met reads the record. So a test shows that checkouts overlap from what
// they saw, not from how long they took.
func MeetingFilter(t testing.TB, repo string) (record string) {
	t.Helper()
	dir := t.TempDir()
	markers, record := filepath.Join(dir, "markers"), filepath.Join(dir, "record")
	if err := os.Mkdir(markers, 0o700); err != nil {
		t.Fatal(err)
	}
	filter := filepath.Join(dir, "smudge")
	script := fmt.Sprintf(`#!/bin/sh
d=%q
touch "$d/$$"
saw=none
i=0
while [ $i -lt 400 ]; do
	for f in "$d"/*; do
		[ "$f" != "$d/$$" ] && [ -e "$f" ] && saw=other
	done
	[ $saw = other ] && break
	sleep 0.05
	i=$((i+1))
done
echo $saw >> %q
exec cat
`, markers, record)
	if err := os.WriteFile(filter, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("slow.txt filter=slow\n"), 0o600)
	os.WriteFile(filepath.Join(repo, "slow.txt"), []byte("slow\n"), 0o600)
	for _, args := range [][]string{
		{"add", ".gitattributes", "slow.txt"},
		{"commit", "-q", "-m", "a file with a smudge filter"},
		{"config", "filter.slow.smudge", filter},
	} {
		if _, err := git.Run(context.Background(), repo, "", args...); err != nil {
			t.Fatal(err)
		}
	}
	return record
}

// Met is what each checkout's filter saw (MeetingFilter), in the order they ended.
func Met(record string) []string {
	b, _ := os.ReadFile(record)
	return strings.Fields(string(b))
}
