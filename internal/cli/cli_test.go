package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// testFlags are a tool's flags of every kind the argument scan must tell apart.
var testFlags = []ucli.Flag{
	&ucli.StringFlag{Name: "kind"},
	&ucli.StringSliceFlag{Name: "agent"},
	&ucli.IntFlag{Name: "n"},
	&ucli.BoolFlag{Name: "json"},
	&ucli.BoolFlag{Name: "quiet", Aliases: []string{"q"}},
	StateDirFlag(),
}

func TestInterspersed(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"a", "--json", "b"}, []string{"--json", "--", "a", "b"}},
		{[]string{"--kind", "run", "a"}, []string{"--kind", "run", "--", "a"}},
		{[]string{"a", "--kind=run"}, []string{"--kind=run", "--", "a"}},
		{[]string{"--json"}, []string{"--json"}},
		{[]string{"a", "--", "--json"}, []string{"--", "a", "--json"}},
		{[]string{"-", "x"}, []string{"--", "-", "x"}},
		{[]string{"a", "--agent", "x", "-n", "3", "b"}, []string{"--agent", "x", "-n", "3", "--", "a", "b"}},
		{[]string{"a", "-q", "b"}, []string{"-q", "--", "a", "b"}},
		{[]string{"a", "--state-dir", "s", "b"}, []string{"--state-dir", "s", "--", "a", "b"}},
		{[]string{"a", "--bogus", "b"}, []string{"--bogus", "--", "a", "b"}},
		{[]string{"a", "--kind"}, []string{"--kind"}},
		{[]string{"a", "--json", "b", "--kind"}, []string{"--json", "--kind"}},
	}
	for _, tt := range tests {
		if got := Interspersed(tt.in, testFlags); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Interspersed(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFirstArg(t *testing.T) {
	tests := []struct {
		in   []string
		want int
	}{
		{[]string{"ps"}, 0},
		{[]string{"--state-dir", "s", "ps", "--json"}, 2},
		{[]string{"--json", "ps"}, 1},
		{[]string{"--kind=run", "ps"}, 1},
		{[]string{"--json", "--", "ps"}, 2},
		{[]string{"--json", "--"}, -1},
		{[]string{"--state-dir", "s"}, -1},
		{nil, -1},
	}
	for _, tt := range tests {
		if got := FirstArg(tt.in, testFlags); got != tt.want {
			t.Errorf("FirstArg(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in    []string
		flags []string
		cmd   []string
	}{
		{[]string{"claude", "-p"}, nil, []string{"claude", "-p"}},
		{[]string{"--state-dir", "s", "--json", "claude", "--json"}, []string{"--state-dir", "s", "--json"}, []string{"claude", "--json"}},
		{[]string{"--kind=run", "--", "-x", "y"}, []string{"--kind=run"}, []string{"-x", "y"}},
		{[]string{"--json", "--"}, []string{"--json"}, []string{}},
		{[]string{"--json", "-"}, []string{"--json"}, []string{"-"}},
		{[]string{"--state-dir"}, []string{"--state-dir"}, nil},
		{nil, nil, nil},
	}
	for _, tt := range tests {
		flags, cmd := SplitCommand(tt.in, testFlags)
		if !reflect.DeepEqual(flags, tt.flags) || !reflect.DeepEqual(cmd, tt.cmd) {
			t.Errorf("SplitCommand(%q) = %q, %q; want %q, %q", tt.in, flags, cmd, tt.flags, tt.cmd)
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
		{Usagef("bad %s", "x"), 2, "t: bad x\nt: run 't --help' for usage\n"},
		{&ExitError{Code: ExitTimeout}, 124, ""},
		{&ExitError{Code: 3, Err: errors.New("low")}, 3, "t: low\n"},
		{errors.New("flag provided but not defined: -x"), 2, "t: flag provided but not defined: -x\n"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		if code := Exit("t", tt.err, &buf); code != tt.code || !strings.HasPrefix(buf.String(), tt.printed) {
			t.Errorf("Exit(%v) = %d printing %q, want %d printing %q", tt.err, code, buf.String(), tt.code, tt.printed)
		}
	}
}

func TestExitStatus(t *testing.T) {
	got := ExitStatus(ExitCode{ExitOK, "done"}, ExitCode{ExitFailure, "failed"}, ExitCode{ExitUsage, "usage error"}, ExitCode{ExitTimeout, "timed out"})
	want := "Exit status: 0 done, 1 failed, 2 usage error, 124 timed out."
	if got != want {
		t.Errorf("ExitStatus(…) = %q, want %q", got, want)
	}
}

// runApp runs a command of testFlags whose action records the state directory and arguments.
func runApp(t *testing.T, args ...string) (stateDir string, rest []string, stdout string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := NewApp(Spec{
		Name: "t", Usage: "test the skeleton", UsageText: "t [options] PATH...", Flags: testFlags,
		ExitCodes: []ExitCode{{ExitOK, "fine"}, {ExitFailure, "not fine"}, {ExitUsage, "usage error"}},
		Action: func(c *ucli.Context) error {
			stateDir, rest = c.String("state-dir"), c.Args().Slice()
			return nil
		},
	}, &out, &errOut)
	err = Run(context.Background(), app, append([]string{"/bin/t"}, args...))
	return stateDir, rest, out.String(), err
}

func TestStateDir(t *testing.T) {
	tests := []struct {
		env      bool
		envValue string
		args     []string
		want     string
		wantErr  string
	}{
		{args: []string{"x"}, want: "state"},
		{args: []string{"x", "--state-dir", "s"}, want: "s"},
		{env: true, envValue: "e", args: []string{"x"}, want: "e"},
		{env: true, envValue: "e", args: []string{"--state-dir=s", "x"}, want: "s"},
		{env: true, envValue: "", args: []string{"--state-dir", "s", "x"}, want: "s"},
		{env: true, envValue: "", args: []string{"x"}, wantErr: "STATE_DIR is set but empty"},
		{env: true, envValue: "", args: []string{"--state-dir", "", "x"}, wantErr: "STATE_DIR is set but empty, or --state-dir is"},
		{args: []string{"--state-dir=", "x"}, wantErr: "--state-dir is empty"},
	}
	for _, tt := range tests {
		if tt.env {
			t.Setenv("STATE_DIR", tt.envValue)
		} else {
			unsetenv(t, "STATE_DIR")
		}
		got, _, _, err := runApp(t, tt.args...)
		var ue *UsageError
		switch {
		case tt.wantErr != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("STATE_DIR=%q (set %v) %q: error %v, want a usage error %q", tt.envValue, tt.env, tt.args, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("STATE_DIR=%q (set %v) %q: state dir %q, %v, want %q", tt.envValue, tt.env, tt.args, got, err, tt.want)
		}
	}
}

func TestRunFlagsAfterArguments(t *testing.T) {
	unsetenv(t, "STATE_DIR")
	dir, rest, _, err := runApp(t, "a", "--state-dir", "s", "b", "--json")
	if err != nil || dir != "s" || !reflect.DeepEqual(rest, []string{"a", "b"}) {
		t.Errorf("Run(a --state-dir s b --json) = %q %q %v, want s [a b] <nil>", dir, rest, err)
	}
	_, _, _, err = runApp(t, "a", "--bogus")
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Errorf("Run(a --bogus) = %v, want a usage error", err)
	}
}

func TestHelp(t *testing.T) {
	_, _, out, err := runApp(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"t - test the skeleton\n", "\nUsage:\n   t [options] PATH...\n", "--state-dir DIR",
		"--version", "\nExit status: 0 fine, 1 not fine, 2 usage error.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("help does not contain %q:\n%s", want, out)
		}
	}
}

func TestVersion(t *testing.T) {
	_, _, out, err := runApp(t, "--version")
	if want := "t version " + Version() + "\n"; err != nil || out != want {
		t.Errorf("Run(--version) printed %q, %v, want %q", out, err, want)
	}
	defer func(v string) { version = v }(version)
	version = "v1.2.3"
	if got := Version(); got != "v1.2.3" {
		t.Errorf("Version() = %q with -X version=v1.2.3, want v1.2.3", got)
	}
}

// unsetenv unsets name for the test, restoring it after (t.Setenv can only set).
func unsetenv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "") // registers the restore
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}

func TestTable(t *testing.T) {
	var b strings.Builder
	Table(&b, [][]string{{"NAME", "STATUS"}, {"wörker", "running"}, {"a", "-"}})
	want := "NAME    STATUS \nwörker  running\na       -      \n"
	if b.String() != want {
		t.Errorf("Table = %q, want %q", b.String(), want)
	}
	b.Reset()
	Table(&b, nil)
	if b.String() != "" {
		t.Errorf("Table(nil) = %q, want nothing", b.String())
	}
}
