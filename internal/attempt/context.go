package attempt

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentfleet/fleet/internal/record"
)

// The prompt's additions: what dispatch.sh appended to every prompt, the other agents at work
// in the same repository and its coordination instructions.

// NoBranch is the branch dispatch.sh printed for a directory outside git.
const NoBranch = "N/A"

// Peer is another agent running in the same repository.
type Peer struct {
	Bead, Agent, Prompt string
}

// Peers lists the agents running in repo, bead excluded: the registered supervisors whose run
// records say running. Only the registry is listed, so the cost does not grow with the history.
func Peers(d Dir, bead, repo string) []Peer {
	var peers []Peer
	for _, r := range Running(d) {
		if r.Bead == bead || filepath.Clean(r.Repo) != filepath.Clean(repo) {
			continue
		}
		// One line each: a peer's prompt is shown, not obeyed.
		peers = append(peers, Peer{r.Bead, r.Agent, strings.Join(strings.Fields(record.Truncate(r.Prompt, 200)), " ")})
	}
	return peers
}

// WithContext is prompt with what dispatch.sh appended to it: the other agents at work in the
// same repository (each with its own agent type: dispatch.sh printed the new agent's type for
// every one), and its coordination instructions, with the bead and the branch (NoBranch:
// "unknown", as dispatch.sh said outside git).
func WithContext(prompt, bead, branch string, peers []Peer) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(prompt, "\n"))
	b.WriteString("\n")
	if len(peers) > 0 {
		b.WriteString("\n## Other Active Agents (same repo)\n")
		b.WriteString("These agents are currently working on this repo. Coordinate to avoid overlap.\n")
		for _, p := range peers {
			fmt.Fprintf(&b, "- Bead %s (%s): %s\n", p.Bead, p.Agent, p.Prompt)
		}
	}
	if branch == "" || branch == NoBranch {
		branch = "unknown"
	}
	b.WriteString("\n## Coordination Instructions\n")
	fmt.Fprintf(&b, "- You are agent for bead %s working on branch: %s\n", bead, branch)
	if len(peers) > 0 {
		b.WriteString("- Check the active-agent list above and avoid overlapping file edits\n")
	}
	b.WriteString("- Announce intended scope in your first response before making edits\n")
	b.WriteString("- Pull before committing: git pull --rebase\n")
	fmt.Fprintf(&b, "- Commit frequently with descriptive messages referencing bead %s\n", bead)
	b.WriteString("- When done, provide a clear completion summary with test results and commit SHA\n")
	return b.String()
}
