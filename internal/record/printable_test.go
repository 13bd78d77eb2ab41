package record

import "testing"

func TestPrintableAndQuoteName(t *testing.T) {
	tests := []struct{ in, printable, quoted string }{
		{"state/runs/bd-1.json", "state/runs/bd-1.json", "state/runs/bd-1.json"},
		{"état/runs/bd é.json", "état/runs/bd é.json", "état/runs/bd é.json"},
		{"runs/a\nFAIL: b.json", `runs/a\nFAIL: b.json`, `"runs/a\nFAIL: b.json"`},
		{"runs/\x1b]0;pwned\a.json", `runs/\x1b]0;pwned\a.json`, `"runs/\x1b]0;pwned\a.json"`},
		{"a\u009b2J\u202eb\x7f", `a\u009b2J\u202eb\x7f`, `"a\u009b2J\u202eb\x7f"`},
		{"bad\xffutf8\"\n", `bad\xffutf8"\n`, `"bad\xffutf8\"\n"`},
	}
	for _, tt := range tests {
		if got := Printable(tt.in); got != tt.printable {
			t.Errorf("Printable(%q) = %s, want %s", tt.in, got, tt.printable)
		}
		if got := QuoteName(tt.in); got != tt.quoted {
			t.Errorf("QuoteName(%q) = %s, want %s", tt.in, got, tt.quoted)
		}
	}
}
