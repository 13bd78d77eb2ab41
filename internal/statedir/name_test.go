package statedir

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	gitx "github.com/agentfleet/fleet/internal/git"
)

func TestCheckName(t *testing.T) {
	long := strings.Repeat("x", MaxName)
	tests := []struct {
		kind Kind
		name string
		ok   bool
		why  string // a word the error must hold
	}{
		{KindBead, "bd-1", true, ""},
		{KindBead, "bd-1.2", true, ""}, // dotted bead ids were valid before and stay so
		{KindBead, "A.b_c-9", true, ""},
		{KindBead, "y.spec", true, ""},
		{KindBead, "x.json.reserve", true, ""},
		{KindBead, "9", true, ""},
		{KindBead, "verify", true, ""},
		{KindBead, "head", true, ""},
		{KindBead, "bd-1-", true, ""},
		{KindBead, long, true, ""},
		{KindBead, long + "x", false, "at most 128"},
		{KindBead, "", false, "empty"},
		{KindBead, "-x", false, "start"},
		{KindBead, ".x", false, "start"},
		{KindBead, "_x", false, "start"},
		{KindBead, "a/b", false, "characters"},
		{KindBead, "bd/x", false, "has characters other than"}, // dispatch's bad-input.txtar
		{KindBead, "a..b", false, `".."`},
		{KindBead, "a b", false, "characters"},
		{KindBead, "a;rm", false, "characters"},
		{KindBead, "$(x)", false, "characters"},
		{KindBead, "a:b", false, "characters"},
		{KindBead, "a~b", false, "characters"},
		{KindBead, "a@{b", false, "characters"},
		{KindBead, "é", false, "characters"},
		{KindBead, "ps\n", false, "characters"},
		{KindBead, "a\x00b", false, "characters"},
		{KindBead, "a\tb", false, "characters"},
		{KindBead, "bd-1.", false, "ends in '.'"},
		{KindBead, "x.lock", false, `".lock"`},
		{KindBead, "HEAD", false, "git"},
		{KindBead, "bd-1-verify", false, "verification"},
		{KindWorker, "builder-1", true, ""},
		{KindWorker, "Builder_2", true, ""},
		{KindWorker, "w.1", false, "'_' and '-'"}, // a window name with '.' cannot be targeted
		{KindWorker, "w:1", false, "characters"},
		{KindWorker, "w-verify", true, ""}, // only results/ knows -verify
		{KindWorker, "HEAD", false, "git"},
		{KindWorker, "w.lock", false, "characters"},
		{KindLoop, "loop-1", true, ""},
		{KindLoop, "loop.1", false, "characters"},
		{KindLoop, "", false, "ralph loop name is empty"},
	}
	for _, tt := range tests {
		err := CheckName(tt.kind, tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("CheckName(%s, %q) = %v, want ok %v", tt.kind, tt.name, err, tt.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), tt.why) {
			t.Errorf("CheckName(%s, %q) = %v, want an error saying %q", tt.kind, tt.name, err, tt.why)
		}
	}
}

// TestCheckNameAgreesWithGit checks the rule against git check-ref-format --branch: every name
// the rule accepts is a valid branch name.
func TestCheckNameAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	for _, name := range []string{"bd-1", "bd-1.2", "A.b_c-9", "y.spec", "9", "bd-1-", "head", "x.lockx",
		"bd-1.", "x.lock", "HEAD", "a..b", "-x", ".x"} {
		_, err := gitx.Run(context.Background(), "", "", "check-ref-format", "--branch", name)
		gitOK := err == nil
		if CheckName(KindBead, name) == nil && !gitOK {
			t.Errorf("CheckName(bead, %q) accepts a name git check-ref-format --branch refuses", name)
		}
	}
}

func TestTmuxName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"agent-bd-1", "agent-bd-1"},
		{"agent-bd-1.2", "agent-bd-1_2"}, // tmux 3.3a: session_check_name
		{"a:b.c", "a_b_c"},
	}
	for _, tt := range tests {
		if got := TmuxName(tt.in); got != tt.want {
			t.Errorf("TmuxName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzCheckName: whatever a name holds, one the rule accepts is a plain file name that no layout
// path can escape from.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"bd-1", "bd-1.2", "../x", "a/b", "x.lock", "HEAD", "-x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if CheckName(KindBead, name) != nil {
			return
		}
		if strings.ContainsAny(name, "/\\ \t\n\x00:~'\"$`;&|<>*?[]{}()!") || strings.HasPrefix(name, ".") ||
			strings.HasPrefix(name, "-") || strings.Contains(name, "..") || len(name) > MaxName {
			t.Errorf("CheckName(bead, %q) accepted an unsafe name", name)
		}
		if CheckName(KindWorker, name) == nil && strings.Contains(name, ".") {
			t.Errorf("CheckName(worker, %q) accepted a '.'", name)
		}
	})
}
