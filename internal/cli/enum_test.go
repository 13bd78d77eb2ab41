package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

func TestEnumFlag(t *testing.T) {
	format := func(d Dialect) *EnumFlag {
		return &EnumFlag{StringFlag: ucli.StringFlag{Name: "format", Value: "text"}, Choices: []string{"text", "json"}, Dialect: d}
	}
	for _, tc := range []struct {
		name, value, want string // want: the error, "" none
		flag              *EnumFlag
	}{
		{"a choice", "json", "", format(Plain)},
		{"plain", "yaml", `unknown --format "yaml"; use one of text, json`, format(Plain)},
		{"labelled", "yaml", "argument --format: invalid choice: 'yaml' (choose from 'text', 'json')", format(Labelled)},
		{"the default", "", "", &EnumFlag{StringFlag: ucli.StringFlag{Name: "kind"}, Choices: []string{"a"}}},
		{"own words", "x", "no x here", &EnumFlag{StringFlag: ucli.StringFlag{Name: "by"}, Choices: []string{"day"},
			Invalid: func(v string) error { return Usagef("no %s here", v) }}},
	} {
		err := tc.flag.Check(tc.value)
		var ue *UsageError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Check(%q) = %v, want nil", tc.name, tc.value, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want || !errors.As(err, &ue)):
			t.Errorf("%s: Check(%q) = %v, want the usage error %q", tc.name, tc.value, err, tc.want)
		}
	}
}

// TestEnumFlagInApp: urfave/cli checks the value of an EnumFlag that was set (a usage error,
// exit 2), reads it as a string flag's, and Interspersed knows it takes a value.
func TestEnumFlagInApp(t *testing.T) {
	run := func(args ...string) (string, int) {
		var out, errs bytes.Buffer
		app := NewApp(Spec{Name: "tool", Flags: []ucli.Flag{
			&EnumFlag{StringFlag: ucli.StringFlag{Name: "format", Value: "text"}, Choices: []string{"text", "json"}}},
			Action: func(c *ucli.Context) error {
				out.WriteString(c.String("format") + " " + strings.Join(c.Args().Slice(), ","))
				return nil
			}}, &out, &errs)
		code := Exit("tool", Run(context.Background(), app, append([]string{"tool"}, args...)), &errs)
		return out.String() + errs.String(), code
	}
	if out, code := run("a", "--format", "json"); code != 0 || out != "json a" {
		t.Errorf("tool a --format json: %q, exit %d; want \"json a\", exit 0", out, code)
	}
	if out, code := run(); code != 0 || out != "text " {
		t.Errorf("tool: %q, exit %d; want the default, exit 0", out, code)
	}
	if out, code := run("--format", "yaml"); code != ExitUsage || !strings.Contains(out, `unknown --format "yaml"; use one of text, json`) {
		t.Errorf("tool --format yaml: %q, exit %d; want the usage error, exit 2", out, code)
	}
}

// TestManSections: a page has every section of a man page, whatever the tool declares, and
// the choices of an EnumFlag are in its OPTIONS.
func TestManSections(t *testing.T) {
	var out bytes.Buffer
	app := NewApp(Spec{Name: "tool", Usage: "do it", Flags: []ucli.Flag{
		&EnumFlag{StringFlag: ucli.StringFlag{Name: "format", Usage: "the `FORMAT`"}, Choices: []string{"text", "json"}}}}, &out, &out)
	if err := Run(context.Background(), app, []string{"tool", ManWord}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".SH NAME\n", ".SH SYNOPSIS\n", ".SH DESCRIPTION\n", ".SH OPTIONS\n", ".SH EXIT STATUS\n",
		".SH ENVIRONMENT\n", ".SH FILES\n", ".SH EXAMPLES\n", `\fB\-\-format\fR \fIFORMAT\fR` + "\nthe FORMAT; one of: text, json\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the page has no %q:\n%s", want, out.String())
		}
	}
}
