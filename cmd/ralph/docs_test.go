package main

import (
	"fmt"
	"github.com/agentfleet/fleet/internal/testenv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestDocs runs testdata/docs.txtar: ralph's man page and completions (issue 20).
func TestDocs(t *testing.T) {
	testscript.Run(t, testscript.Params{Files: []string{"testdata/docs.txtar"},
		Condition: func(cond string) (bool, error) {
			if handled, ok, err := testenv.Needs(cond); handled {
				return ok, err // [needs:man]: fails under CI=true when missing
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		}})
}
