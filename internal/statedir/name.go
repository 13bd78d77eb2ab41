package statedir

import (
	"fmt"
	"strings"
)

// Kind is the kind of name CheckName checks; it is how an error names it.
type Kind string

// The kinds of name that become file names, tmux targets and git refs.
const (
	KindBead   Kind = "bead id"         // dispatch's beads: file names, tmux session agent-<bead>
	KindWorker Kind = "worker name"     // swarm's workers: file names, tmux window names, branches
	KindLoop   Kind = "ralph loop name" // ralph's loops (each runs as a worker of that name)
)

// MaxName is the longest name CheckName accepts, in bytes (all of them ASCII). With the longest
// suffix the layout adds ("-verify.json", or a temp file's ".<name>.tmp-<random>") a file name
// stays far under the 255 bytes file systems allow.
const MaxName = 128

// CheckName returns an error unless name is a safe name of its kind: one that can be a file
// name, a tmux target and a git branch name as it is, with nothing to quote or escape. The rule,
// for every kind:
//
//   - 1 to MaxName bytes, each an ASCII letter or digit, '_', '-' or (beads only) '.'; so no
//     '/', no space, no shell metacharacter, no control character, nothing outside ASCII;
//   - the first a letter or digit: no leading '-' (an option to every command it reaches) or
//     '.' (a hidden file, and the layout's temp files start with one);
//   - no "..", no final '.', no final ".lock", and not "HEAD" (git check-ref-format --branch
//     refuses all four; git 2.39);
//   - a bead id does not end in "-verify": results/<bead>-verify.json is the verification of
//     <bead>, so a bead "x-verify" would have its result read as x's verification.
//
// Beads may hold '.' (bead ids like bd-1.2 are common), though tmux stores a session name with
// '.' and ':' replaced by '_' (see TmuxName). Workers and loops may not: their names become tmux
// window names in targets "session:name", where tmux 3.3a splits a '.' off as a pane index even
// after '=', so a dotted window cannot be named in a target at all.
func CheckName(kind Kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is empty", kind)
	case len(name) > MaxName:
		return fmt.Errorf("%s is %d characters long; at most %d are allowed", kind, len(name), MaxName)
	}
	dots := kind == KindBead
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(isAlnum(c) || (i > 0 && (c == '_' || c == '-' || (c == '.' && dots)))) {
			allowed := "'_' and '-'"
			if dots {
				allowed = "'.', '_' and '-'"
			}
			return fmt.Errorf("%s %q has characters other than letters, digits, %s, or does not start with a letter or digit", kind, name, allowed)
		}
	}
	switch {
	case strings.Contains(name, ".."):
		return fmt.Errorf("%s %q contains \"..\"", kind, name)
	case strings.HasSuffix(name, "."):
		return fmt.Errorf("%s %q ends in '.', which git does not allow in a branch name", kind, name)
	case strings.HasSuffix(name, ".lock"):
		return fmt.Errorf("%s %q ends in \".lock\", which git does not allow in a branch name", kind, name)
	case name == "HEAD":
		return fmt.Errorf("%s %q is not a valid git branch name", kind, name)
	case kind == KindBead && strings.HasSuffix(name, verifySuffix):
		return fmt.Errorf("%s %q ends in %q: results/%s.json would be read as the verification of bead %q",
			kind, name, verifySuffix, name, strings.TrimSuffix(name, verifySuffix))
	}
	return nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// TmuxName is the name tmux gives a session asked for as name: tmux 3.3a (session_check_name)
// replaces every '.' and ':' with '_', so "agent-bd-1.2" becomes "agent-bd-1_2", and a target
// "=agent-bd-1.2" finds nothing (the '.' is read as a pane index). Whoever creates a session and
// later targets it must use this name for both. Two beads that differ only in '.' against '_'
// (bd-1.2, bd-1_2) share a session name, as they did under dispatch.sh.
func TmuxName(name string) string {
	return strings.NewReplacer(".", "_", ":", "_").Replace(name)
}
