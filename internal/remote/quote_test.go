package remote

import (
	"os/exec"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"dispatch", "version"}, "dispatch version"},
		{[]string{""}, "''"},
		{[]string{"a b"}, "'a b'"},
		{[]string{"it's"}, `'it'\''s'`},
		{[]string{"$(rm -rf /)"}, "'$(rm -rf /)'"},
		{[]string{"~/x"}, "'~/x'"},
		{[]string{"A=1", "cmd"}, "'A=1' cmd"},
		{[]string{"/srv/app", "feature/a-1", "--state-dir=x"}, "/srv/app feature/a-1 '--state-dir=x'"},
		{[]string{"a\nb"}, "'a\nb'"},
	} {
		if got := Quote(tc.argv...); got != tc.want {
			t.Errorf("Quote(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

// TestQuoteShell checks that sh reads every quoted argv back as it was, hostile words included.
func TestQuoteShell(t *testing.T) {
	words := []string{"plain", "", "a b", "it's", `"dq"`, "$(id)", "`id`", "$HOME", "a;b", "a|b", "*", "?", "[x]",
		"~", "~root", "A=1", "\\", "tab\there", "new\nline", "'", "''", "#c", "!x", "{a,b}", "é ü", "-n"}
	cmd := exec.Command("sh", "-c", `printf '%s\0' `+Quote(words...))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(words) {
		t.Fatalf("sh read %d words back, want %d: %q", len(got), len(words), got)
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("word %d: sh read %q, want %q", i, got[i], words[i])
		}
	}
}

func FuzzQuote(f *testing.F) {
	f.Add("a b", "it's")
	f.Fuzz(func(t *testing.T, a, b string) {
		if strings.ContainsRune(a+b, 0) {
			return
		}
		out, err := exec.Command("sh", "-c", `printf '%s\0' `+Quote(a, b)).Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		if want := a + "\x00" + b + "\x00"; string(out) != want {
			t.Fatalf("Quote(%q, %q): sh read %q", a, b, out)
		}
	})
}
