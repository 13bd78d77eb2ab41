package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	ucli "github.com/urfave/cli/v2"
)

// initMarker is how init recognises its section, in our files and in the Python swarm's.
const initMarker = "Process Management (swarm)"

// initSection is the section init writes: what an agent needs to run other agents with swarm.
const initSection = `## Process Management (swarm)

Use swarm to run other agents in parallel, each in a tmux window (or a background process)
and, with --worktree, in a git worktree and branch of its own.

### Quick reference
` + "```bash" + `
swarm spawn --name <id> --tmux --worktree -- claude   # a new agent in its own worktree
swarm ls                                             # workers, status and activity
swarm status <name>                                  # exit 0 running, 1 stopped, 2 not found
swarm send <name> "prompt"                           # type a prompt into it
swarm peek <name>                                    # its screen
swarm logs <name>                                    # its output
swarm wait <name>                                    # until it exits (its exit code)
swarm attach <name>                                  # watch it in tmux
swarm kill <name> --rm-worktree                      # stop it, remove its worktree
` + "```" + `

### Worktrees
` + "`--worktree`" + ` makes <repo>-worktrees/<name> on branch <name> (--branch to choose). Commit
there; kill --rm-worktree and clean keep a worktree with uncommitted changes unless
--force-dirty.

### Tips
- ` + "`--ready-wait`" + `: spawn returns once the agent shows it is ready for input.
- ` + "`--tag T`" + ` and ` + "`swarm ls --tag T`" + `: groups of workers.
- ` + "`--env K=V`" + `: environment for the agent.
- ` + "`swarm send --all \"msg\"`" + `, ` + "`swarm wait --all`" + `: every running worker.

State is in $SWARM_DIR (default ~/.swarm): state.json, and logs/ for process workers.`

// initOptions are init's flags.
type initOptions struct {
	dryRun, force, withSandbox bool
	file                       string
}

// AddFlags appends init's flags, each writing into o, to flags.
func (o *initOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	return append(flags,
		&ucli.BoolFlag{Name: "dry-run", Destination: &o.dryRun, Usage: "say what would be written, write nothing"},
		choiceFlag(ucli.StringFlag{Name: "file", Destination: &o.file, Usage: "the file (`F`: AGENTS.md or CLAUDE.md); default AGENTS.md if it exists, else CLAUDE.md if it exists, else a new AGENTS.md"},
			"AGENTS.md", "CLAUDE.md"),
		&ucli.BoolFlag{Name: "force", Destination: &o.force, Usage: "replace the swarm section when there is one"},
		&ucli.BoolFlag{Name: "with-sandbox", Destination: &o.withSandbox, Usage: "also write, where absent, the files of Docker-sandboxed workers: " +
			"sandbox.sh, Dockerfile.sandbox, setup-sandbox-network.sh, teardown-sandbox-network.sh, ORCHESTRATOR.md, PROMPT.md"},
	)
}

func initCommand() *cli.Command {
	var o initOptions
	return &cli.Command{
		Name: "init", Usage: "add swarm instructions to AGENTS.md or CLAUDE.md",
		UsageText: "swarm init [--dry-run] [--file AGENTS.md|CLAUDE.md] [--force] [--with-sandbox]",
		Flags:     o.AddFlags(nil),
		Action: func(_ context.Context, _ *ucli.Context, s cli.Streams) error {
			if err := runInit(s.Out, o.file, o.dryRun, o.force); err != nil {
				return err
			}
			if o.withSandbox {
				return initSandbox(s.Out, o.dryRun)
			}
			return nil
		},
	}
}

// sandboxFiles are init --with-sandbox's files (sandbox/), in the order the Python swarm
// wrote its own: the same names, roles and settings (image sandbox-loop, network sandbox-net,
// SANDBOX_IMAGE, MEMORY_LIMIT, ...); the text is ours.
var sandboxFiles = []struct {
	name string
	exec bool
}{{"sandbox.sh", true}, {"Dockerfile.sandbox", false}, {"setup-sandbox-network.sh", true},
	{"teardown-sandbox-network.sh", true}, {"ORCHESTRATOR.md", false}, {"PROMPT.md", false}}

//go:embed sandbox
var sandboxFS embed.FS

// initSandbox writes each sandbox file that is not there (anything at its name, a link
// included, is left alone and said so), scripts executable.
func initSandbox(out io.Writer, dryRun bool) error {
	for _, f := range sandboxFiles {
		if _, err := os.Lstat(f.name); err == nil {
			fmt.Fprintf(out, "swarm: %s already exists, skipping\n", f.name)
			continue
		}
		if dryRun {
			fmt.Fprintf(out, "Would create %s\n", f.name)
			continue
		}
		data, err := sandboxFS.ReadFile("sandbox/" + f.name)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if f.exec {
			mode = 0o755
		}
		if err := createNew(f.name, data, mode); err != nil {
			return err
		}
		fmt.Fprintf(out, "Created %s\n", f.name)
	}
	return nil
}

// createNew writes a file that must not exist yet (O_EXCL: a file or link that appeared
// meanwhile is neither overwritten nor followed); a failed write leaves no file.
func createNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// readDoc reads an instructions file: its text and whether it exists.
func readDoc(path string) (string, bool, error) {
	b, err := fsx.ReadFileLimit(path, 16<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading %s: %w", path, err)
	}
	return string(b), true, nil
}

// sectionRe is the swarm section: from its heading to the next "## " heading or the end.
var sectionRe = regexp.MustCompile(`(?s)## Process Management \(swarm\).*?(\n## |\z)`)

func runInit(stdout io.Writer, file string, dryRun, force bool) error {
	target := file
	if target == "" {
		target = "AGENTS.md"
		if _, err := os.Stat("AGENTS.md"); err != nil {
			if _, err := os.Stat("CLAUDE.md"); err == nil {
				target = "CLAUDE.md"
			}
		}
	}
	text, exists, err := readDoc(target)
	if err != nil {
		return err
	}
	marked := strings.Contains(text, initMarker)
	if !force {
		if marked {
			fmt.Fprintf(stdout, "swarm: %s already contains swarm instructions\n", target)
			return nil
		}
		if file == "" {
			// Auto-detected: the other file counts too.
			for _, other := range []string{"AGENTS.md", "CLAUDE.md"} {
				if other == target {
					continue
				}
				if t, ok, err := readDoc(other); err == nil && ok && strings.Contains(t, initMarker) {
					fmt.Fprintf(stdout, "swarm: %s already contains swarm instructions\n", other)
					return nil
				}
			}
		}
	}
	var out, said string
	switch {
	case !exists:
		out, said = initSection+"\n", "Created "+target
		if dryRun {
			said = fmt.Sprintf("Would create %s with swarm agent instructions", target)
		}
	case force && marked:
		out = sectionRe.ReplaceAllStringFunc(text, func(m string) string {
			if strings.HasSuffix(m, "\n## ") {
				return initSection + "\n## "
			}
			return initSection
		})
		said = "Updated swarm instructions in " + target
		if dryRun {
			said = "Would update swarm instructions in " + target
		}
	default:
		out, said = strings.TrimRight(text, "\n")+"\n\n"+initSection+"\n", "Added swarm instructions to "+target
		if dryRun {
			said = "Would append swarm instructions to " + target
		}
	}
	if !dryRun {
		mode := os.FileMode(0o644)
		if fi, err := os.Stat(target); err == nil {
			mode = fi.Mode().Perm()
		}
		if err := fsx.WriteFileAtomic(target, []byte(out), mode); err != nil {
			return fmt.Errorf("writing %s: %w", target, err)
		}
	}
	fmt.Fprintln(stdout, said)
	return nil
}
