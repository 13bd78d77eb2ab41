package ralphloop

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/ralph/loop"
	ucli "github.com/urfave/cli/v2"
)

// The starter prompt's verbs: init writes it, template prints it. Neither needs the swarm
// directory.

// InitCommand is `init [--force]`: PROMPT.md, the starter prompt, in the current directory.
func InitCommand(c Config) *cli.Command {
	var force bool // init's one flag
	return &cli.Command{
		Name: "init", Usage: "write PROMPT.md, a starter prompt", UsageText: c.usageText("TOOL init [--force]"),
		Epilog: c.usageText(initEpilog),
		Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "force", Destination: &force, Usage: "overwrite an existing PROMPT.md"}},
		Action: func(_ context.Context, uc *ucli.Context, s cli.Streams) error {
			_, err := os.Lstat("PROMPT.md")
			exists := err == nil
			if exists && !force {
				return errors.New("PROMPT.md already exists (use --force to overwrite)")
			}
			if err := fsx.WriteFileAtomic("PROMPT.md", []byte(loop.PromptTemplate+"\n"), 0o644); err != nil {
				return err
			}
			if exists {
				fmt.Fprintln(s.Out, "created PROMPT.md (overwritten)")
			} else {
				fmt.Fprintln(s.Out, "created PROMPT.md")
			}
			return nil
		},
	}
}

// TemplateCommand is `template`: the starter prompt on stdout.
func TemplateCommand(c Config) *cli.Command {
	return &cli.Command{
		Name: "template", Usage: "print the starter prompt", UsageText: c.usageText("TOOL template"),
		Action: func(_ context.Context, _ *ucli.Context, s cli.Streams) error {
			fmt.Fprintln(s.Out, loop.PromptTemplate)
			return nil
		},
	}
}
