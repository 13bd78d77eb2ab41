package cli

import (
	"context"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"

	ucli "github.com/urfave/cli/v2"

	fleet "github.com/agentfleet/fleet"
)

// version is the toolkit's version as make's builds stamp it from git (v0.1.0,
// v0.1.0-3-gabc1234) and make release from the tag:
// -ldflags "-X github.com/agentfleet/fleet/internal/cli.version=v1.2.3".
var version string

// Version is the version --version prints (versionOf).
func Version() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(version, bi, fleet.Version())
}

// pseudoVersion is the end of the version go build stamps on a commit that no tag names
// (v0.1.1-0.20261207142513-abcdef123456): not a release, whatever its numbers say.
var pseudoVersion = regexp.MustCompile(`[0-9]{14}-[0-9a-f]{12}$`)

// versionOf chooses, in order: the version the build stamped (make); the module's version
// when it is a release's (go install ...@v0.1.0); else the VERSION file's (file), with the
// commit and ".dirty" when go build stamped them from a checkout (v0.1.0+abcdef123456.dirty),
// alone when there is no git (a source archive).
func versionOf(stamped string, bi *debug.BuildInfo, file string) string {
	if stamped != "" {
		return stamped
	}
	if bi == nil {
		return file
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" && !strings.Contains(v, "+") && !pseudoVersion.MatchString(v) {
		return v
	}
	var revision, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision == "" {
		return file
	}
	v := file + "+" + revision[:min(12, len(revision))]
	if modified == "true" {
		v += ".dirty"
	}
	return v
}

// Spec is what one command is made of: a tool, or one verb of a tool with verbs (dispatch).
type Spec struct {
	Name        string // the tool, or "tool verb"
	Usage       string // one line: what it does
	UsageText   string // the synopsis, one form a line
	Description string // what the help says between the synopsis and the options
	// Epilog is what the help says after the options: examples, how-tos (argparse's epilog).
	Epilog string
	Flags  []ucli.Flag
	// ExitCodes are documented at the end of the help; none means 0 ok, 1 failure, 2 usage error.
	ExitCodes []ExitCode
	// HideVersion drops --version, for verbs: the tool itself answers it.
	HideVersion bool
	Action      ucli.ActionFunc
}

// defaultExitCodes are those of a command that has no codes of its own.
var defaultExitCodes = []ExitCode{{ExitOK, "ok"}, {ExitFailure, "failure"}, {ExitUsage, "usage error"}}

// helpTemplate lays out every command's help the same way: the synopsis under "Usage:" (the
// line scripts and the workspace's acceptance tests look for), the description, the options,
// the epilog (examples), and the exit codes last, as a man page does. The epilog is printed as
// written (through Metadata, never parsed as a template).
const helpTemplate = `{{.Name}}{{with .Usage}} - {{.}}{{end}}

Usage:
   {{if .UsageText}}{{wrap .UsageText 3}}{{else}}{{.Name}} [options]{{end}}{{with .Description}}

{{wrap . 0}}{{end}}{{if .VisibleFlags}}

Options:{{range .VisibleFlags}}
   {{wrap .String 6}}{{end}}{{end}}{{with index .Metadata "epilog"}}

{{.}}{{end}}{{with index .Metadata "exitStatus"}}

{{.}}{{end}}
`

// NewApp builds the urfave/cli app of s, writing to stdout and stderr, with what every command
// of the toolkit shares: the help layout with the exit codes, --version, and flag mistakes as
// usage errors (exit 2). Run it with Run.
func NewApp(s Spec, stdout, stderr io.Writer) *ucli.App {
	codes := s.ExitCodes
	if len(codes) == 0 {
		codes = defaultExitCodes
	}
	return &ucli.App{
		Name: s.Name, Usage: s.Usage, UsageText: s.UsageText, Description: s.Description,
		Flags: s.Flags, Action: s.Action,
		Writer: stdout, ErrWriter: stderr,
		Version: Version(), HideVersion: s.HideVersion,
		HideHelpCommand:       true,
		CustomAppHelpTemplate: helpTemplate,
		Metadata:              map[string]any{"exitStatus": ExitStatus(codes...), "epilog": s.Epilog},
		OnUsageError:          func(_ *ucli.Context, err error, _ bool) error { return Usagef("%v", err) },
	}
}

// Run runs app on the command line args (args[0], the program, is replaced by the app's name),
// with flags allowed after positional arguments (see Interspersed). A -h or --help among the
// flags, wherever it stands, prints the help and nothing else runs, as argparse did
// ("swarm kill w --help"): urfave/cli would take the first operand for a help topic and fail.
func Run(ctx context.Context, app *ucli.App, args []string) error {
	if len(args) > 0 {
		args = args[1:]
	}
	if !strings.Contains(app.Name, " ") { // a tool, not a verb: its man page and completions (docs.go)
		if handled, err := docsRequest(func() docs { return appDocs(app) }, args, app.Writer); handled {
			return err
		}
	}
	if AsksHelp(args, app.Flags) {
		args = []string{"--help"}
	}
	return app.RunContext(ctx, append([]string{app.Name}, Interspersed(args, app.Flags)...))
}

// StateDirFlag returns a new --state-dir flag: env STATE_DIR, default "state". An empty value
// is a usage error: a STATE_DIR= left empty by a script must not turn the current directory into
// the state directory.
func StateDirFlag() *ucli.StringFlag {
	return &ucli.StringFlag{
		Name: "state-dir", Value: "state", EnvVars: []string{"STATE_DIR"},
		Usage: "use `DIR` as the state directory", // urfave/cli shows DIR after the flag too: once here
		Action: func(_ *ucli.Context, dir string) error {
			if dir != "" {
				return nil
			}
			if v, ok := os.LookupEnv("STATE_DIR"); ok && v == "" {
				// urfave/cli cannot tell which of the two the empty value came from.
				return Usagef("the state directory is empty (STATE_DIR is set but empty, or --state-dir is); give a directory, or unset STATE_DIR for ./state")
			}
			return Usagef("--state-dir is empty; give a directory")
		},
	}
}
