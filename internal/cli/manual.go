package cli

// Manual is what a tool's man page says that its command line cannot: what its exit codes
// mean, the environment and files it reads, and examples. Each tool keeps its Manual next to
// its command definition (cmd/<tool>), written from docs/<tool>.md; the SYNOPSIS and OPTIONS
// come from the command line itself (docs.go), so that the page cannot drift from the binary.
type Manual struct {
	// Description is the page's DESCRIPTION, paragraphs separated by a blank line; the
	// tool's one-line usage comes first either way.
	Description string
	// Synopsis are forms of a tool's command line that are no verb's (dispatch's BEAD form),
	// before the verbs' in the SYNOPSIS.
	Synopsis []string
	// ExitStatus are the codes and what they mean, verbs' own ones included ("status: the
	// worker is stopped"); none: the command's ExitCodes (Spec), else 0 ok, 1 failure, 2 usage
	// error.
	ExitStatus []ExitCode
	// Environment are the variables the tool reads; those of flags (EnvVars: STATE_DIR for
	// --state-dir) are added to them by the page.
	Environment []Entry
	// Files are the files and directories the tool reads and writes.
	Files []Entry
	// Examples are command lines and what they do.
	Examples []Example
}

// Entry is one variable or file of a man page and what it is.
type Entry struct{ Name, Meaning string }

// Example is one command line of a man page's EXAMPLES and what it does.
type Example struct{ Command, Meaning string }
