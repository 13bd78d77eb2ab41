package cli

import (
	"context"
	"io"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// TestGiven: a flag's Given action says what c.IsSet said, for an options struct: given on the
// command line (even as its default) or by its environment variable, or not at all.
func TestGiven(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string // TEST_GIVEN_SOCKET's value, "" unset
		want bool
	}{
		{"not given", nil, "", false},
		{"given empty", []string{"--socket", ""}, "", true},
		{"given", []string{"--socket=k"}, "", true},
		{"by the environment", nil, "k", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("TEST_GIVEN_SOCKET", tc.env)
			}
			var socket string
			var given, ran bool
			app := NewApp(Spec{Name: "t", Flags: []ucli.Flag{&ucli.StringFlag{Name: "socket", Destination: &socket,
				EnvVars: []string{"TEST_GIVEN_SOCKET"}, Action: Given[string](&given)}},
				Action: func(*ucli.Context) error { ran = true; return nil }}, io.Discard, io.Discard)
			if err := Run(context.Background(), app, append([]string{"t"}, tc.args...)); err != nil || !ran {
				t.Fatalf("Run(%q) = %v (action ran: %v), want nil", tc.args, err, ran)
			}
			if given != tc.want {
				t.Errorf("Run(%q): given = %v, want %v", tc.args, given, tc.want)
			}
		})
	}
}
