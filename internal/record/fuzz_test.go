package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the record readers and migrations: whatever a state
// directory holds, they must return an error or a record, never panic.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{"runs", "results"} {
		files, _ := filepath.Glob(filepath.Join("../../../shared/compat/validate-state/state", dir, "bd-edge-*.json"))
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{"bead":"bd-d","started_at":"'$START'","attempt":1,"prompt":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		DecodeRun(b)
		DecodeResult(b)
		// A migration is idempotent: migrating its output again changes nothing.
		if m, err := MigrateRun(b, b, Defaults{MaxRetries: 2}); err == nil && m.Output != nil {
			if !json.Valid(m.Output) {
				t.Fatalf("MigrateRun output is not JSON: %s", m.Output)
			}
			if again, err := MigrateRun(m.Output, b, Defaults{MaxRetries: 2}); err != nil || len(again.Changes) > 0 {
				t.Errorf("MigrateRun twice changed %v (err %v)", again.Changes, err)
			}
		}
		if m, err := MigrateResult(b, nil, Defaults{MaxRetries: 2}); err == nil && m.Output != nil {
			if again, err := MigrateResult(m.Output, nil, Defaults{MaxRetries: 2}); err != nil || len(again.Changes) > 0 {
				t.Errorf("MigrateResult twice changed %v (err %v)", again.Changes, err)
			}
		}
	})
}
