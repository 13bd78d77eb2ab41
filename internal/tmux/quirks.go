package tmux

import (
	"strings"
	"unicode/utf8"
)

// This file holds what tmux does that a caller would not guess, each as a small pure function
// with a table test (quirks_test.go) whose cases cite the tmux version and situation.

// verdict is what a tmux error message means to a caller.
type verdict int

const (
	failed verdict = iota // anything else: a real failure, reported as tmux worded it
	gone                  // no server, session, window or pane: for a query, "nothing there"
	exists                // the name asked for a new session is taken
)

// classify reads what tmux printed on stderr. Only tmux 3.2 and later are read (NewSession's -e
// needs 3.2); the messages are matched whole or by their fixed part, never by a word inside, so
// that "error connecting to … (Permission denied)" stays a failure.
//
// A server shutting down answers in ways that all mean "gone" (tmux 3.3a, seen when a command
// races the end of the last session or a kill-server):
//   - "no current target": the server has no session left but has not exited yet; cmd-find.c
//     fails before it even looks at an exact "=name" target.
//   - "server exited unexpectedly": the server closed the connection without answering
//     (client.c CLIENT_EXIT_LOST_SERVER; tmux before 3.1 said "lost server").
//   - "no server running on <socket>": the socket file is left but nobody listens.
//
// Several lines (one per failed command) are gone only if every one is.
func classify(stderr string) verdict {
	v := failed
	for i, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		lv := classifyLine(strings.TrimSpace(line))
		if i > 0 && lv != v {
			return failed
		}
		v = lv
	}
	return v
}

func classifyLine(msg string) verdict {
	switch {
	case strings.HasPrefix(msg, "no server running on "),
		// ENOENT: no socket file, or no directory for it. Other errors from connect(2)
		// (EACCES, ENAMETOOLONG) are real failures.
		strings.HasPrefix(msg, "error connecting to ") && strings.HasSuffix(msg, " (No such file or directory)"),
		msg == "server exited unexpectedly",
		// MSG_SHUTDOWN reached the client before its command ran (client.c, exit reason
		// CLIENT_EXIT_SERVER_EXITED).
		msg == "server exited",
		msg == "no current target",
		strings.HasPrefix(msg, "can't find session: "),
		strings.HasPrefix(msg, "can't find window: "),
		strings.HasPrefix(msg, "can't find pane: "):
		return gone
	case strings.HasPrefix(msg, "duplicate session: "):
		return exists
	}
	return failed
}

func (v verdict) String() string {
	switch v {
	case gone:
		return "gone"
	case exists:
		return "exists"
	}
	return "failed"
}

// rawOutput (tmux -u) makes tmux print what a command answers byte for byte. tmux 3.3a prints
// every byte outside 0x20-0x7e of a detached client's answer as "_" (cmdq_print,
// utf8_sanitize) unless the client is marked UTF-8, which it is only when LC_ALL, LC_CTYPE or
// LANG says UTF-8: under cron (no locale, or LANG=C) a GIT_AUTHOR_NAME "Jörg" read with
// show-environment came back "J_rg", and a tab in a format as "_". -u marks the client UTF-8
// whatever the caller's locale, and changes nothing else for a client that never attaches.
const rawOutput = "-u"

// escapeArg protects one command-line argument from tmux's own parsing of its argument vector:
// tmux (3.0 to at least 3.5, cmd_parse_from_arguments) reads an argument that ends in ';' as the
// end of a command, drops the ';' and runs what follows as another tmux command, so argv
// {"sh", "-c", "make;", "kill-server"} would kill the server. An argument ending in `\;` keeps
// a literal ';' (and loses the backslash), so a backslash goes before a final ';'.
func escapeArg(arg string) string {
	if strings.HasSuffix(arg, ";") {
		return arg[:len(arg)-1] + `\;`
	}
	return arg
}

// escapeFormat protects a value that tmux expands as a format: new-session's -s and -c and
// new-window's -n and -c (tmux 3.3a) read "#{pane_pid}", "#S" and the like, so a directory
// "/work/#1" would become another. "##" is a literal '#'.
func escapeFormat(s string) string { return strings.ReplaceAll(s, "#", "##") }

// lastLines returns the last n lines of a capture, each with its trailing spaces dropped and
// ending in "\n", after dropping the blank lines at its end (a screen's rows below its text).
func lastLines(capture string, n int) string {
	lines := strings.Split(capture, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// chunks cuts text into pieces of at most max bytes, never inside a UTF-8 sequence (tmux 3.3a
// drops the halves of a character split between two send-keys). A piece is shorter only where
// a character would straddle the cut, or if one character is longer than max.
func chunks(text string, max int) []string {
	var out []string
	for len(text) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if cut == 0 {
			_, cut = utf8.DecodeRuneInString(text)
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}
