// Package compattest finds the team's compatibility corpus for tests: ../shared/compat beside
// the repository (real records, the users' schemas, the original tools' outputs). A test that
// needs it is skipped, not failed, where the corpus is absent.
package compattest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the absolute path of elem inside the corpus, skipping t when it does not exist.
func Dir(t testing.TB, elem ...string) string {
	t.Helper()
	dir, err := Find(elem...)
	if err != nil {
		t.Skipf("compat corpus not found: %v", err)
	}
	return dir
}

// Find returns the absolute path of elem inside the corpus, and an error when it does not
// exist, for tests of which only a part needs the corpus.
func Find(elem ...string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(append([]string{filepath.Dir(root), "shared", "compat"}, elem...)...)
	_, err = os.Stat(dir)
	return dir, err
}

// moduleRoot walks up from the test's working directory (its package) to the go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
