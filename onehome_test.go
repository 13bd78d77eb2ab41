package fleet

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOneHome holds issue 28's checks of one home each, over every Go file of the module, tests
// included: no git process started outside internal/git (its environment, identity and error
// text are set there once), one definition of the hidden supervisor verb, one Rails type.
func TestOneHome(t *testing.T) {
	gitExec := regexp.MustCompile(`exec\.Command(Context)?\(([A-Za-z_.]+, )?"git"`)
	verbDef := regexp.MustCompile(`(?m)^\s*(const|var)?\s*SuperviseVerb\s*=`)
	railsType := regexp.MustCompile(`(?m)^type Rails\b`)
	var gitOutside, verbs, rails []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if gitExec.Match(b) && !strings.HasPrefix(path, "internal/git/") {
			gitOutside = append(gitOutside, path)
		}
		if verbDef.Match(b) {
			verbs = append(verbs, path)
		}
		if railsType.Match(b) {
			rails = append(rails, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(gitOutside) > 0 {
		t.Errorf("git started outside internal/git (use its Repo, Cmd or Run): %v", gitOutside)
	}
	if len(verbs) != 1 {
		t.Errorf("the supervisor verb is defined in %v, want one place", verbs)
	}
	if len(rails) != 1 {
		t.Errorf("type Rails is defined in %v, want one place", rails)
	}
}
