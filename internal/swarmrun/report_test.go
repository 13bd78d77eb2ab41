package swarmrun

import (
	"strings"
	"testing"
)

// TestReportPrintable: the markdown report of a state whose task error holds a host's escape
// sequences and line breaks (a state written before they were made printable at the source,
// or an agent's reason) is printable: swarm run history prints it on a terminal.
func TestReportPrintable(t *testing.T) {
	st := &State{ExecutionID: "x", Order: []string{"a"}, Tasks: map[string]*Task{"a": {ID: "a", Status: Failed,
		Error: &TaskError{Type: ErrExecution, Message: "failed \x1b]0;retitled\x07\x1b[2Jhere\n| forged | row |"}}}}
	report := Report(st)
	if strings.ContainsAny(report, "\x1b\x07") || strings.Contains(report, "\n| forged") {
		t.Errorf("the report holds the host's text raw:\n%q", report)
	}
	if !strings.Contains(report, `failed here \| forged \| row \|`) {
		t.Errorf("the report lacks the error made printable:\n%s", report)
	}
}
