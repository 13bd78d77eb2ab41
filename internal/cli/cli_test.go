package cli

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestInterspersed(t *testing.T) {
	valued := map[string]bool{"kind": true}
	tests := []struct{ in, want []string }{
		{[]string{"a", "--json", "b"}, []string{"--json", "--", "a", "b"}},
		{[]string{"--kind", "run", "a"}, []string{"--kind", "run", "--", "a"}},
		{[]string{"a", "--kind=run"}, []string{"--kind=run", "--", "a"}},
		{[]string{"--json"}, []string{"--json"}},
		{[]string{"a", "--", "--json"}, []string{"--", "a", "--json"}},
		{[]string{"-", "x"}, []string{"--", "-", "x"}},
	}
	for _, tt := range tests {
		if got := Interspersed(tt.in, valued); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Interspersed(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestExit(t *testing.T) {
	tests := []struct {
		err     error
		code    int
		printed string
	}{
		{nil, 0, ""},
		{errors.New("boom"), 1, "t: boom\n"},
		{Usagef("bad %s", "x"), 2, "t: bad x\n"},
		{&ExitError{Code: 124}, 124, ""},
		{&ExitError{Code: 3, Err: errors.New("low")}, 3, "t: low\n"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		if code := Exit("t", tt.err, &buf); code != tt.code || !strings.HasPrefix(buf.String(), tt.printed) {
			t.Errorf("Exit(%v) = %d printing %q, want %d printing %q", tt.err, code, buf.String(), tt.code, tt.printed)
		}
	}
}
