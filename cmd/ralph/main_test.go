package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain registers the test binary as ralph for the testscript files of every kind of work
// (each kind's tests run their own testdata/<kind>-*.txtar with their own setup).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"ralph": func() { os.Exit(run(os.Args)) },
	})
}
