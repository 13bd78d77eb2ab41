package main

import (
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestFormArgs pins how the dispatch form's words are read: as dispatch.sh read them (its
// fourth word the prompt, whatever it looks like; after it --branch B, --force, --relay,
// --no-relay, anything else the template, the last one winning), with dispatch's other flags
// allowed where dispatch.sh had none.
func TestFormArgs(t *testing.T) {
	flags := dispatchApp(strings.NewReader(""), io.Discard, io.Discard).Flags
	tests := []struct {
		args     string // words separated by "|"
		want     string
		warnings int
	}{
		{"bd|repo|claude|Fix it", "--|bd|repo|claude|Fix it", 0},
		{"bd|repo|claude|- a list", "--|bd|repo|claude|- a list", 0},
		{"bd|repo|claude|---", "--|bd|repo|claude|---", 0},
		{"bd|repo|claude|--fix it|bug-fix", "--|bd|repo|claude|--fix it|bug-fix", 0},
		{"bd|repo|claude|p|one|two", "--|bd|repo|claude|p|two", 0},
		{"bd|repo|claude|p|--weird", "--|bd|repo|claude|p|--weird", 1},
		{"bd|repo|claude|p|-", "--|bd|repo|claude|p|-", 0},
		{"bd|repo|claude|p|--branch|b|t|--force", "--branch|b|--force|--|bd|repo|claude|p|t", 0},
		{"bd|repo|claude|p|--branch=b|--timeout|30", "--branch=b|--timeout|30|--|bd|repo|claude|p", 0},
		{"bd|repo|claude|p|-force", "-force|--|bd|repo|claude|p", 0},
		{"bd|repo|claude|p|---force", "--|bd|repo|claude|p|---force", 1},
		{"bd|repo|claude|p|--relay|--no-relay", "--no-relay|--|bd|repo|claude|p", 0},
		{"bd|repo|claude|p|--no-relay|--wait|--relay", "--wait|--relay|--|bd|repo|claude|p", 0},
		{"--state-dir|S|bd|repo|claude|p", "--state-dir|S|--|bd|repo|claude|p", 0},
		{"bd|--no-tmux|repo|claude|p", "--no-tmux|--|bd|repo|claude|p", 0},
		{"--weird|bd|repo|claude|p", "--weird|--|bd|repo|claude|p", 0}, // refused by urfave/cli
		{"bd|repo|claude|--wait", "--|bd|repo|claude|--wait", 1},
		{"bd|repo|claude|--", "--|bd|repo|claude|--", 0},
		{"--|-bd|repo|claude|p", "--|-bd|repo|claude|p", 0},
		{"bd|repo|claude", "--|bd|repo|claude", 0},
		{"bd|repo|claude|p|--branch", "--branch|--|bd|repo|claude|p", 0},
		{"bd|repo|claude|p|--help", "--help|--|bd|repo|claude|p", 0},
	}
	for _, tt := range tests {
		got, warnings := formArgs(strings.Split(tt.args, "|"), flags)
		if strings.Join(got, "|") != tt.want || len(warnings) != tt.warnings {
			t.Errorf("formArgs(%q) = %q, %d warning(s) %q; want %q, %d", tt.args, strings.Join(got, "|"), len(warnings), warnings, tt.want, tt.warnings)
		}
	}
	if got, _ := formArgs(nil, flags); !reflect.DeepEqual(got, []string{"--"}) {
		t.Errorf("formArgs(nil) = %q, want [--]", got)
	}
}
