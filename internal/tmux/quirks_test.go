package tmux

import (
	"reflect"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		stderr string
		want   verdict
		why    string
	}{
		// Gone: nothing there, or a server on its way out.
		{"no server running on /tmp/tmx1/s", gone, "tmux 2.1+: socket file left by an exited server (ECONNREFUSED)"},
		{"error connecting to /tmp/tmx1/s (No such file or directory)", gone, "tmux 2.1+: no socket file yet (ENOENT)"},
		{"no current target", gone, "tmux 3.3a: kill-session/has-session -t =name just after the last session ended; the server is exiting"},
		{"server exited unexpectedly", gone, "tmux 3.1+ (3.3a seen): the server exited mid-command, after the last session ended or a kill-server"},
		{"server exited", gone, "tmux 3.3a client.c: MSG_SHUTDOWN reached a waiting client"},
		{"can't find session: agent-bd-1", gone, "tmux 2.9+: exact session target with no such session"},
		{"can't find window: w1", gone, "tmux 2.9+: =session:=window with no such window"},
		{"can't find pane: %9", gone, "tmux 2.9+: no such pane"},
		{"no current target\nserver exited unexpectedly", gone, "every line says gone"},
		{"  no current target\n", gone, "surrounding space is tmux's newline"},
		// Exists.
		{"duplicate session: agent-bd-1", exists, "tmux 3.3a: new-session -s with a taken name"},
		// Real failures, even where a gone message's words appear.
		{"error connecting to /tmp/tmx1/s (Permission denied)", failed, "another user's socket: not 'no server'"},
		{"error connecting to /tmp/x/s (File name too long)", failed, "socket path over the sun_path limit"},
		{"command too long", failed, "tmux 3.3a: the command's arguments exceed 16 KiB (MAX_IMSGSIZE)"},
		{"create window failed: index 0 in use", failed, "tmux 3.3a new-window"},
		{"unknown command: frobnicate", failed, ""},
		{"open terminal failed: not a terminal", failed, "tmux 3.3a: attach without a terminal"},
		{"no current target\nunknown command: x", failed, "mixed lines: one real failure"},
		{"session not found: agent-bd-1", failed, "tmux before 2.1's wording; this package needs 3.2"},
		{"lost server", failed, "tmux before 3.1's wording; this package needs 3.2"},
		{"warning: can't find session: x is fine", failed, "a gone message inside another is not one"},
		{"", failed, "no message at all"},
	}
	for _, tt := range tests {
		if got := classify(tt.stderr); got != tt.want {
			t.Errorf("classify(%q) = %v, want %v (%s)", tt.stderr, got, tt.want, tt.why)
		}
	}
}

func TestEscapeArg(t *testing.T) {
	tests := []struct{ in, want, why string }{
		{"make", "make", "nothing to protect"},
		{"make;", `make\;`, "tmux 3.3a: a final ';' ends the command"},
		{";", `\;`, "a lone ';' separates commands"},
		{`a\;`, `a\\;`, `tmux turns a final "\;" into ";", so a literal "\;" needs one more backslash`},
		{"a;b", "a;b", "only a final ';' is special"},
		{"a; ", "a; ", "nor one followed by a space"},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := escapeArg(tt.in); got != tt.want {
			t.Errorf("escapeArg(%q) = %q, want %q (%s)", tt.in, got, tt.want, tt.why)
		}
	}
}

func TestEscapeFormat(t *testing.T) {
	tests := []struct{ in, want, why string }{
		{"/repo", "/repo", ""},
		{"/work/#1", "/work/##1", "tmux 3.3a expands -c as a format"},
		{"/tmp/#{pane_pid}", "/tmp/##{pane_pid}", "a format that would expand to the empty string"},
		{"##", "####", ""},
	}
	for _, tt := range tests {
		if got := escapeFormat(tt.in); got != tt.want {
			t.Errorf("escapeFormat(%q) = %q, want %q (%s)", tt.in, got, tt.want, tt.why)
		}
	}
}

func TestLastLines(t *testing.T) {
	tests := []struct {
		capture string
		n       int
		want    string
		why     string
	}{
		{"a\nb\nc\n\n\n\n", 2, "b\nc\n", "tmux 3.3a captures the screen's blank rows below the text"},
		{"a   \nb \n", 5, "a\nb\n", "-J keeps trailing spaces (tmux 3.3a)"},
		{"a\n\nb\n", 3, "a\n\nb\n", "blank lines inside the text stay"},
		{"\n\n\n", 3, "", "a blank screen"},
		{"", 1, "", "nothing captured"},
		{"x\ny", 1, "y\n", "no final newline"},
	}
	for _, tt := range tests {
		if got := lastLines(tt.capture, tt.n); got != tt.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q (%s)", tt.capture, tt.n, got, tt.want, tt.why)
		}
	}
}

func TestTargetCheck(t *testing.T) {
	tests := []struct {
		target Target
		ok     bool
		why    string
	}{
		{SessionTarget("agent-bd-1"), true, ""},
		{WindowTarget("swarm-x", "w1"), true, ""},
		{WindowTarget("swarm-x", "worker#1"), true, "'#' is only doubled where tmux expands formats"},
		{WindowTarget("swarm-x", "-w"), true, "tmux 3.3a skips offsets (+1, -1) in an exact window name"},
		{"agent-bd-1", false, "a bare name is matched by prefix"},
		{"=agent-bd-1", false, "no ':': for a pane command tmux 3.3a reads a lone name as a pane"},
		{"=s:w1", false, "window name without '=' is prefix- and pattern-matched"},
		{"", false, "tmux would use the current pane"},
		{SessionTarget("agent-bd-1.2"), false, "tmux 3.3a stored that session as agent-bd-1_2"},
		{SessionTarget("$1"), false, "tmux 3.3a reads '$1' as a session id even after '='"},
		{SessionTarget(""), false, ""},
		{WindowTarget("s", "1"), false, "tmux 3.3a: =s:=1 is window index 1, whatever its name"},
		{WindowTarget("s", "@3"), false, "tmux 3.3a: a window id"},
		{WindowTarget("s", "w.2"), false, "tmux 3.3a cuts the target at '.': pane 2 of window w"},
		{WindowTarget("s", "{end}"), false, "tmux 3.3a maps {end} to the last window"},
		{WindowTarget("s", "a\tb"), false, "tmux 3.3a stores a tab in a name as \\t"},
		{WindowTarget("s", ""), false, ""},
	}
	for _, tt := range tests {
		if err := tt.target.check(); (err == nil) != tt.ok {
			t.Errorf("Target(%q).check() = %v, want ok %v (%s)", tt.target, err, tt.ok, tt.why)
		}
	}
}

func TestChunks(t *testing.T) {
	tests := []struct {
		text string
		max  int
		want []string
		why  string
	}{
		{"", 4, nil, ""},
		{"abcd", 4, []string{"abcd"}, ""},
		{"abcdefghi", 4, []string{"abcd", "efgh", "i"}, ""},
		{"abcé", 4, []string{"abc", "é"}, "é is 2 bytes: tmux 3.3a drops half a character"},
		{"✓✓", 4, []string{"✓", "✓"}, "✓ is 3 bytes"},
		{"✓", 2, []string{"✓"}, "a character longer than max goes whole"},
		{"a\xffb", 2, []string{"a\xff", "b"}, "an invalid byte is its own character"},
	}
	for _, tt := range tests {
		if got := chunks(tt.text, tt.max); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("chunks(%q, %d) = %q, want %q (%s)", tt.text, tt.max, got, tt.want, tt.why)
		}
	}
}
