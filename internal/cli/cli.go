// Package cli is the skeleton the toolkit's commands share around urfave/cli: the app with its
// help layout, --version and usage errors (NewApp), the --state-dir flag (StateDirFlag), flags
// allowed after positional arguments as users of the shell originals expect (Run, Interspersed),
// what options structs bound to flags need (Given, StateDirFlagInto: options.go), the named
// exit codes and their help line (ExitStatus), the router of a tool's verbs (Tool,
// Command: one verb, one Command value), and the one place where an error becomes a diagnostic
// in the tool's dialect and an exit code (Tool.Exit; Exit for a tool without verbs).
//
// It is the only package below cmd/ that imports urfave/cli: a library takes typed options,
// never a command line.
package cli

import (
	"fmt"
	"io"
	"strings"
)

// Exit codes. ExitOK, ExitFailure and ExitUsage are every tool's; the others are those of the
// tools that set them, named here so that no exit code is written as a bare number.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	// ExitTimeout is dispatch --wait's status when the agent timed out: timeout(1)'s 124, which
	// dispatch.sh's callers already test for.
	ExitTimeout = 124
)

// UsageError is a mistake in the command line: exit code 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ExitError carries an exit code chosen by the command, with an optional message to print.
// A nil-message ExitError only sets the code: the command already said what happened.
//
// It has no ExitCode method on purpose: urfave/cli would call os.Exit itself for an error that
// has one, and Exit must stay the one place a tool turns errors into codes.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit maps err to an exit code, printing "tool: message" on stderr when there is something to
// say: Tool.Exit in the Plain dialect, for a tool without verbs.
func Exit(tool string, err error, stderr io.Writer) int {
	return (&Tool{Name: tool}).Exit("", err, stderr)
}

// isFlagError recognises the errors urfave/cli and the flag package return for bad flags.
func isFlagError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"flag provided but not defined", "flag needs an argument", "invalid value", "invalid boolean",
		"Required flag"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// ExitCode is one exit status a command documents in its help: the code and what it means.
type ExitCode struct {
	Code    int
	Meaning string
}

// ExitStatus is the help's line for codes, in their order: "Exit status: 0 ok, 1 failure, 2
// usage error.".
func ExitStatus(codes ...ExitCode) string {
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d %s", c.Code, c.Meaning)
	}
	return "Exit status: " + strings.Join(parts, ", ") + "."
}
