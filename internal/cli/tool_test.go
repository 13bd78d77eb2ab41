package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// testTool is a tool with the shapes of verbs the toolkit has: flags and operands (greet), a
// raw command line (exec), verbs of its own (queue), a hidden supervisor verb, an alias.
func testTool(dialect Dialect, fallback bool) *Tool {
	t := &Tool{
		Name: "tool", Dialect: dialect,
		Usage: func(w io.Writer) { fmt.Fprintln(w, "tool usage") },
		Flags: []ucli.Flag{&ucli.StringFlag{Name: "state-dir"}},
		Commands: []*Command{
			{
				Name: "greet", Aliases: []string{"hi"}, Usage: "say hello",
				Flags: []ucli.Flag{&ucli.StringFlag{Name: "state-dir"}, &ucli.BoolFlag{Name: "loud"}},
				Action: func(_ context.Context, c *ucli.Context, s Streams) error {
					if c.NArg() != 1 {
						return Usagef("greet takes NAME")
					}
					fmt.Fprintf(s.Out, "hello %s loud=%v dir=%s\n", c.Args().First(), c.Bool("loud"), c.String("state-dir"))
					return nil
				},
			},
			{
				Name: "exec", Usage: "run a command",
				Raw: func(_ context.Context, s Streams, args []string) error {
					fmt.Fprintf(s.Out, "exec %q\n", args)
					if len(args) > 0 && args[0] == "fail" {
						return &ExitError{Code: 7, Err: errors.New("it failed")}
					}
					return nil
				},
			},
			{
				Name: "spawn", Usage: "run a command with flags", Remainder: true,
				Flags: []ucli.Flag{&ucli.StringFlag{Name: "name"}, &ucli.BoolFlag{Name: "tmux"}},
				Action: func(_ context.Context, c *ucli.Context, s Streams) error {
					fmt.Fprintf(s.Out, "spawn name=%s tmux=%v cmd=%q\n", c.String("name"), c.Bool("tmux"), c.Args().Slice())
					return nil
				},
			},
			{
				Name: "beat", Usage: "verbs with words of their own",
				UnknownVerb: func(word string, verbs []string) error {
					if word == "" {
						return Usagef("the following arguments are required: beat_command")
					}
					return Usagef("argument beat_command: invalid choice: '%s' (choose from %s)", word, strings.Join(verbs, ", "))
				},
				Commands: []*Command{{Name: "start", Action: func(context.Context, *ucli.Context, Streams) error { return nil }}},
			},
			{
				Name: "said", Usage: "a verb with a help of its own", Help: "tool said {{.Name}} \\ as written\n  --x   an option\n",
				Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "x"}},
				Action: func(context.Context, *ucli.Context, Streams) error { return nil },
			},
			{
				Name: "plan", Usage: "verbs with their own word for an unknown one",
				UnknownVerb: func(word string, verbs []string) error {
					if word == "" {
						return nil // the help on stderr
					}
					return Usagef("no verb %q; the verbs are %s", word, strings.Join(verbs, ", "))
				},
				Commands: []*Command{{Name: "show", Usage: "show it", Action: func(context.Context, *ucli.Context, Streams) error { return nil }}},
			},
			{
				Name: "queue", Usage: "the queue",
				Commands: []*Command{
					{Name: "run", Usage: "run it", Action: func(context.Context, *ucli.Context, Streams) error {
						return errors.New("no plan")
					}},
				},
			},
			{Name: "__supervise", Hidden: true, OwnSignals: true, Raw: func(_ context.Context, s Streams, args []string) error {
				fmt.Fprintln(s.Out, "supervising")
				return nil
			}},
		},
	}
	if fallback {
		t.Default = func(_ context.Context, s Streams, args []string) error {
			fmt.Fprintf(s.Out, "default %q\n", args)
			return nil
		}
	}
	return t
}

func TestToolMain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dialect  Dialect
		fallback bool
		args     []string
		code     int
		stdout   string // a substring of stdout ("" none expected)
		stderr   string // stderr exactly
	}{
		{name: "alone", args: nil, code: 2, stderr: "tool usage\n"},
		{name: "help", args: []string{"--help"}, code: 0, stdout: "tool usage\n"},
		{name: "help word", args: []string{"help"}, code: 0, stdout: "tool usage\n"},
		{name: "help verb", args: []string{"help", "greet"}, code: 0, stdout: "tool greet - say hello"},
		{name: "help nested", args: []string{"help", "queue", "run"}, code: 0, stdout: "tool queue run - run it"},
		{name: "version", args: []string{"--version"}, code: 0, stdout: "tool version "},
		{name: "verb", args: []string{"greet", "bob", "--loud"}, code: 0, stdout: "hello bob loud=true dir=\n"},
		{name: "alias", args: []string{"hi", "bob"}, code: 0, stdout: "hello bob loud=false"},
		{name: "lead flags", args: []string{"--state-dir", "S", "greet", "bob"}, code: 0, stdout: "dir=S\n"},
		{name: "raw", args: []string{"exec", "--x", "-y", "z"}, code: 0, stdout: `exec ["--x" "-y" "z"]`},
		{name: "hidden", args: []string{"__supervise"}, code: 0, stdout: "supervising\n"},
		{name: "exit code", args: []string{"exec", "fail"}, code: 7, stdout: "exec", stderr: "tool: it failed\n"},
		{name: "exit code labelled", dialect: Labelled, args: []string{"exec", "fail"}, code: 7,
			stdout: "exec", stderr: "tool: error: it failed\n"},
		{name: "flags alone", args: []string{"--state-dir", "S"}, code: 2, stderr: "tool usage\n"},
		{name: "unknown verb", args: []string{"nope"}, code: 2,
			stderr: "tool: invalid choice: 'nope' (choose from 'greet', 'exec', 'spawn', 'beat', 'said', 'plan', 'queue')\ntool: run 'tool --help' for usage\n"},
		{name: "unknown verb labelled", dialect: Labelled, args: []string{"nope"}, code: 2,
			stderr: "tool: error: invalid choice: 'nope' (choose from 'greet', 'exec', 'spawn', 'beat', 'said', 'plan', 'queue')\ntool: hint: run 'tool --help' for usage\n"},
		{name: "remainder", args: []string{"spawn", "--name", "w", "--tmux", "--", "sh", "-c", "x --name y"}, code: 0,
			stdout: `spawn name=w tmux=true cmd=["sh" "-c" "x --name y"]`},
		{name: "remainder without --", args: []string{"spawn", "--name", "w", "sleep", "--tmux"}, code: 0,
			stdout: `spawn name=w tmux=false cmd=["sleep" "--tmux"]`},
		{name: "remainder of flags", args: []string{"spawn", "--tmux", "--", "--name"}, code: 0,
			stdout: `spawn name= tmux=true cmd=["--name"]`},
		{name: "remainder none", args: []string{"spawn", "--name", "w"}, code: 0, stdout: `spawn name=w tmux=false cmd=[]`},
		{name: "remainder help", args: []string{"help", "spawn"}, code: 0, stdout: "tool spawn - run a command with flags"},
		// --help with operands, before or after them, is the verb's help, as argparse had it
		// (urfave/cli took the first operand for a help topic: "No help topic for 'bob'").
		{name: "help after operand", dialect: Labelled, args: []string{"greet", "bob", "--help"}, code: 0, stdout: "tool greet - say hello"},
		{name: "help before operand", dialect: Labelled, args: []string{"greet", "-h", "bob"}, code: 0, stdout: "tool greet - say hello"},
		{name: "help among flags", dialect: Labelled, args: []string{"greet", "--state-dir", "S", "bob", "--loud", "--help"}, code: 0,
			stdout: "tool greet - say hello"},
		{name: "help as a flag's value", dialect: Labelled, args: []string{"greet", "--state-dir", "--help", "bob"}, code: 0,
			stdout: "hello bob loud=false dir=--help\n"},
		{name: "help after --", dialect: Labelled, args: []string{"greet", "--", "--help"}, code: 0, stdout: "hello --help"},
		{name: "help nested with operand", dialect: Labelled, args: []string{"queue", "run", "plan", "--help"}, code: 0,
			stdout: "tool queue run - run it"},
		{name: "help own with operand", dialect: Labelled, args: []string{"said", "x", "--help"}, code: 0, stdout: "tool said {{.Name}}"},
		{name: "help remainder before --", dialect: Labelled, args: []string{"spawn", "--name", "w", "--help", "--", "sh"}, code: 0,
			stdout: "tool spawn - run a command with flags"},
		{name: "help remainder in the command", dialect: Labelled, args: []string{"spawn", "--name", "w", "--", "sh", "--help"}, code: 0,
			stdout: `spawn name=w tmux=false cmd=["sh" "--help"]`},
		{name: "help remainder in the command without --", dialect: Labelled, args: []string{"spawn", "--name", "w", "sh", "--help"}, code: 0,
			stdout: `spawn name=w tmux=false cmd=["sh" "--help"]`},
		{name: "remainder flag error", dialect: Labelled, args: []string{"spawn", "--bad", "--", "sh"}, code: 2,
			stderr: "tool: error: flag provided but not defined: -bad\ntool: hint: run 'tool spawn --help' for usage\n"},
		{name: "nested none said", dialect: Labelled, args: []string{"beat"}, code: 2,
			stderr: "tool: error: the following arguments are required: beat_command\ntool: hint: run 'tool beat --help' for usage\n"},
		{name: "nested unknown said", dialect: Labelled, args: []string{"beat", "x"}, code: 2,
			stderr: "tool: error: argument beat_command: invalid choice: 'x' (choose from start)\ntool: hint: run 'tool beat --help' for usage\n"},
		{name: "nested help", args: []string{"beat", "--help"}, code: 0, stdout: "Usage:\n   tool beat <verb>"},
		{name: "own help word", args: []string{"help", "said"}, code: 0, stdout: "tool said {{.Name}} \\ as written\n  --x   an option\n"},
		{name: "own unknown verb alone", dialect: Labelled, args: []string{"plan"}, code: 2, stderr: "Usage:\n   tool plan <verb>"},
		{name: "own unknown verb", dialect: Labelled, args: []string{"plan", "nope"}, code: 2,
			stderr: "tool: error: no verb \"nope\"; the verbs are show\ntool: hint: run 'tool plan --help' for usage\n"},
		{name: "fallback", fallback: true, args: []string{"bd-1", "repo"}, code: 0, stdout: `default ["bd-1" "repo"]`},
		{name: "fallback alone", fallback: true, args: nil, code: 0, stdout: `default []`},
		{name: "usage error labelled", dialect: Labelled, args: []string{"greet"}, code: 2,
			stderr: "tool: error: greet takes NAME\ntool: hint: run 'tool greet --help' for usage\n"},
		{name: "usage error plain", args: []string{"greet"}, code: 2,
			stderr: "tool: greet takes NAME\ntool: run 'tool --help' for usage\n"},
		{name: "flag error", dialect: Labelled, args: []string{"greet", "--bad", "x"}, code: 2,
			stderr: "tool: error: flag provided but not defined: -bad\ntool: hint: run 'tool greet --help' for usage\n"},
		{name: "nested failure", dialect: Labelled, args: []string{"queue", "run"}, code: 1, stderr: "tool: error: no plan\n"},
		{name: "nested alone", dialect: Labelled, args: []string{"queue"}, code: 2, stderr: "Usage:\n   tool queue <verb>"},
		{name: "nested unknown", dialect: Labelled, args: []string{"queue", "x"}, code: 2,
			stderr: "tool: error: invalid choice: 'x' (choose from 'run')\ntool: hint: run 'tool queue --help' for usage\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := testTool(tc.dialect, tc.fallback).Main(append([]string{"tool"}, tc.args...), Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != tc.code {
				t.Errorf("Main(%q) = %d, want %d (stderr %q)", tc.args, code, tc.code, errb.String())
			}
			if tc.stdout != "" && !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("Main(%q) stdout = %q, want it to hold %q", tc.args, out.String(), tc.stdout)
			}
			if tc.stdout == "" && out.Len() > 0 {
				t.Errorf("Main(%q) stdout = %q, want none", tc.args, out.String())
			}
			if got := errb.String(); tc.stderr != got && !(strings.HasSuffix(tc.stderr, "<verb>") && strings.HasPrefix(got, tc.stderr)) {
				t.Errorf("Main(%q) stderr = %q, want %q", tc.args, got, tc.stderr)
			}
		})
	}
}

// TestCommandHelp: a Command's own Help is its --help word for word (template syntax in it
// printed, not run), on stdout.
func TestCommandHelp(t *testing.T) {
	for _, args := range [][]string{{"said", "--help"}, {"said", "-h"}, {"help", "said"}} {
		var out, errb bytes.Buffer
		code := testTool(Labelled, false).Main(append([]string{"tool"}, args...), Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
		if want := "tool said {{.Name}} \\ as written\n  --x   an option\n"; code != 0 || out.String() != want || errb.Len() > 0 {
			t.Errorf("Main(%q) = %d, stdout %q, stderr %q; want 0 and stdout %q", args, code, out.String(), errb.String(), want)
		}
	}
}

// TestCommandEpilog: a Command's Epilog is printed as written (template syntax in it printed,
// not run) after its options and before its exit status, as argparse printed an epilog.
func TestCommandEpilog(t *testing.T) {
	tool := &Tool{Name: "tool", Dialect: Labelled, Commands: []*Command{{
		Name: "go", Usage: "go somewhere", Description: "What it does.", Epilog: "Examples:\n  tool go {{.Name}} --far",
		Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "far", Usage: "go far"}},
		Action: func(context.Context, *ucli.Context, Streams) error { return nil },
	}}}
	var out, errb bytes.Buffer
	code := tool.Main([]string{"tool", "go", "x", "--help"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	got := out.String()
	opts, ex, exit := strings.Index(got, "--far       go far"), strings.Index(got, "Examples:\n  tool go {{.Name}} --far\n"), strings.Index(got, "Exit status:")
	if code != 0 || errb.Len() > 0 || !strings.Contains(got, "What it does.") || opts < 0 || ex < opts || exit < ex {
		t.Errorf("tool go x --help = %d, stdout %q, stderr %q; want the options, the epilog as written, then the exit status", code, got, errb.String())
	}
}
