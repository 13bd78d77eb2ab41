package tmux

import (
	"fmt"
	"strings"
)

// Target names one pane exactly, as the -t of a tmux command: the active pane of a session's
// current window (SessionTarget) or of a named window (WindowTarget). Make one with those
// functions; a bare name would be matched by prefix, and methods refuse a Target they did not
// make.
type Target string

// SessionTarget is the active pane of session's current window: "=session:". The '=' keeps
// tmux from matching "agent-bd-1" to "agent-bd-10"; the ':' makes the rest of the target the
// window, so that a '.' left in a name is not read as a pane index.
func SessionTarget(session string) Target { return Target("=" + session + ":") }

// WindowTarget is the active pane of the window named window in session: "=session:=window".
// tmux 3.3a accepts '=' before a window name too (cmd-find.c, CMD_FIND_EXACT_WINDOW) and then
// neither prefix- nor pattern-matches it; it still reads a window name of digits as an index
// and one starting with '@' as a window id, and splits the target at '.', so such names are
// refused (see checkName). Two windows of one name make the target ambiguous ("can't find
// window"), which NewWindow does not create.
func WindowTarget(session, window string) Target { return Target("=" + session + ":=" + window) }

// check returns an error unless t is of the two forms SessionTarget and WindowTarget make, with
// names tmux 3.3a matches exactly.
func (t Target) check() error {
	s := string(t)
	session, window, ok := strings.Cut(strings.TrimPrefix(s, "="), ":")
	if !strings.HasPrefix(s, "=") || !ok {
		return fmt.Errorf("tmux target %q is not exact; make it with tmux.SessionTarget or tmux.WindowTarget", s)
	}
	if err := checkName(sessionName, session); err != nil {
		return err
	}
	if window == "" {
		return nil
	}
	if !strings.HasPrefix(window, "=") {
		return fmt.Errorf("tmux target %q is not exact; make it with tmux.SessionTarget or tmux.WindowTarget", s)
	}
	return checkName(windowName, window[1:])
}

// nameKind says whether checkName checks a session or a window name.
type nameKind string

const (
	sessionName nameKind = "session"
	windowName  nameKind = "window"
)

// windowAliases are the window targets tmux 3.3a maps before looking a name up
// (cmd_find_window_table), so a window of that name cannot be targeted.
var windowAliases = []string{"{start}", "{last}", "{end}", "{next}", "{previous}"}

// checkName returns an error unless tmux 3.3a stores name as given and finds it again by an
// exact target. tmux escapes control characters in both kinds of name (utf8_stravis), and
// replaces ':' and '.' in a session name with '_' (session_check_name); a target is cut at the
// first ':' and the first '.' after it. In an exact target a session name starting with '$' is
// a session id, and a window name of digits is an index, one starting with '@' a window id.
// '#' is fine: the creating methods double it for tmux's format expansion.
func checkName(kind nameKind, name string) error {
	bad := func(why string) error { return fmt.Errorf("tmux %s name %q %s", kind, name, why) }
	if name == "" {
		return bad("is empty")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f {
			return bad("has a control character, which tmux would store escaped")
		}
	}
	switch kind {
	case sessionName:
		if strings.ContainsAny(name, ":.") {
			return bad("has ':' or '.', which tmux replaces with '_'")
		}
		if name[0] == '$' {
			return bad("starts with '$', which tmux reads as a session id")
		}
	case windowName:
		if strings.ContainsAny(name, ":.") {
			return bad("has ':' or '.', which tmux reads as target separators")
		}
		if strings.Trim(name, "0123456789") == "" {
			return bad("is all digits, which tmux reads as a window index even after '='")
		}
		if name[0] == '@' {
			return bad("starts with '@', which tmux reads as a window id")
		}
		for _, a := range windowAliases {
			if name == a {
				return bad("is a name tmux reads as another window")
			}
		}
	}
	return nil
}
