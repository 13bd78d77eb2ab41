package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/record"
)

// maxPrompt bounds a prompt read from a file or stdin; a prompt is text, not a data set.
const maxPrompt = 4 << 20

// readPrompt resolves the PROMPT argument: the text itself, @FILE, or - for standard input.
func readPrompt(arg string, stdin io.Reader) (string, error) {
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
	case strings.HasPrefix(arg, "@") && len(arg) > 1:
		b, err := os.ReadFile(arg[1:])
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

// peer is another agent running in the same repository.
type peer struct {
	bead, agent, started, prompt string
}

// others lists the agents running in repo, bead excluded: the registered supervisors whose run
// records say running. Only the registry is listed, so the cost does not grow with the history.
func others(d attempt.Dir, bead, repo string) []peer {
	var peers []peer
	for _, r := range attempt.Running(d) {
		if r.Bead == bead || filepath.Clean(r.Repo) != filepath.Clean(repo) {
			continue
		}
		peers = append(peers, peer{r.Bead, r.Agent, r.StartedAt, strings.Join(strings.Fields(record.Truncate(r.Prompt, 100)), " ")})
	}
	return peers
}

// augment appends what dispatch.sh added to every prompt: the other agents at work in the same
// repository, and how to work beside them.
func augment(prompt string, peers []peer) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(prompt, "\n"))
	b.WriteString("\n\n## Other agents in this repository\n")
	if len(peers) == 0 {
		b.WriteString("No other agent is running in this repository right now.\n")
	}
	for _, p := range peers {
		fmt.Fprintf(&b, "- %s (%s, since %s): %s\n", p.bead, p.agent, p.started, p.prompt)
	}
	b.WriteString(`
## Coordination
- Other agents may be changing this repository while you work. Keep to your task's files.
- Before editing a file, check ` + "`git status`" + `; never revert or overwrite changes you did not make.
- Commit only your own changes, in small commits, and say in each message which task they belong to.
- If your task depends on work another agent is doing, say so in your final message instead of doing it twice.
`)
	return b.String()
}
