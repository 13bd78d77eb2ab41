package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/record"
)

// maxPrompt bounds a prompt read from a file or stdin; a prompt is text, not a data set.
const maxPrompt = 4 << 20

// readPrompt resolves the PROMPT argument: the text itself, @FILE, or - for standard input.
// dispatch.sh took every prompt as text, so "@FILE" is a file only when FILE exists; otherwise
// ("@team please fix …") the prompt is the text as given, with a warning on stderr.
func readPrompt(arg string, stdin io.Reader, stderr io.Writer) (string, error) {
	var text string
	switch {
	case arg == "-":
		b, err := io.ReadAll(io.LimitReader(stdin, maxPrompt+1))
		if err != nil {
			return "", fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		if len(b) > maxPrompt {
			return "", cli.Usagef("the prompt on stdin is over %d MB", maxPrompt>>20)
		}
		text = string(b)
	case strings.HasPrefix(arg, "@") && len(arg) > 1 && !namesFile(arg[1:]):
		fmt.Fprintf(stderr, "%s: warning: no file %q: the prompt is the text as given\n", tool, record.Truncate(arg[1:], 60))
		text = arg
	case strings.HasPrefix(arg, "@") && len(arg) > 1:
		b, err := readBounded(arg[1:], maxPrompt)
		if err != nil {
			return "", cli.Usagef("reading the prompt: %v", err)
		}
		if len(b) > maxPrompt {
			return "", cli.Usagef("prompt file %s is over %d MB", arg[1:], maxPrompt>>20)
		}
		text = string(b)
	default:
		text = arg
	}
	if strings.TrimSpace(text) == "" {
		return "", cli.Usagef("the prompt is empty")
	}
	return text, nil
}

// namesFile reports whether name could be meant as a file: anything there, or an error other
// than "nothing there" (a directory that may not be searched), which reading then reports. Text
// that cannot be a path (too long, a component that is a file) is no file either.
func namesFile(name string) bool {
	_, err := os.Stat(name)
	return err == nil || !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENAMETOOLONG))
}

// readBounded reads at most limit+1 bytes of the file at path (a pipe or /dev/fd/N too, for
// a shell's process substitution): @/dev/zero ends at the bound, not at the memory's.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}
