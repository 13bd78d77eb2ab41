package remote

import "strings"

// Quote makes argv one command line for a POSIX shell, each word in single quotes (a single
// quote inside a word ends the quoting, is escaped with a backslash, and quoting starts again), so
// that the remote shell ssh hands it to reads back exactly argv. ssh joins its words with
// spaces and gives the result to the login shell of the remote user: without this, a space, a
// ';' or a '$(…)' in a path or a branch would be read by that shell. Words made only of
// characters no shell treats specially are left bare, so the command line stays readable in
// logs. Prompts never pass here: they go on stdin.
func Quote(argv ...string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteWord(a))
	}
	return b.String()
}

func quoteWord(a string) string {
	if a == "" {
		return "''"
	}
	if isBare(a) {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// isBare says whether a needs no quoting: letters, digits and -_./:@%+,= only, and not a
// word the shell would read as an assignment or a tilde at its start.
func isBare(a string) bool {
	for i := 0; i < len(a); i++ {
		c := a[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-_./:@%+,", c) >= 0:
		default:
			return false
		}
	}
	return true
}
