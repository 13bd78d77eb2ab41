// Package benchdata writes synthetic state directories for the benchmarks: realistic full
// schema-v1 run and result records, with a share of legacy minimal ones, every status, retries,
// templates and failure reasons. The same seed gives the same files, so the toolkit and the tools
// it replaces are timed on identical data. tools/genrecords is its command line.
package benchdata

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
)

var (
	verbs     = []string{"Build", "Fix", "Update", "Review", "Design", "Implement", "Refactor"}
	templates = []string{"feature", "bug-fix", "refactor", "docs", ""}
	reasons   = []string{"exit-code-1", "status-file", "tests-failed", "session-exited-without-markers"}
	models    = map[string][]string{"claude": {"opus", "sonnet", "haiku"}, "codex": {"gpt-5.3-codex"}}
)

// Generate writes n run and result record pairs into out/runs and out/results: full schema-v1
// records, legacyPct percent of pairs in the legacy minimal form, invalidPct percent of run
// records made schema-invalid. The same arguments write the same bytes.
func Generate(n int, out string, seed int64, legacyPct, invalidPct int) error {
	return GenerateFrom(0, n, out, seed, legacyPct, invalidPct)
}

// GenerateFrom is Generate for the pairs numbered from start (bead bd-<start in hex>, started
// 7 minutes after the one before): start n adds pairs to a set of n, as a history grows.
func GenerateFrom(start, n int, out string, seed int64, legacyPct, invalidPct int) error {
	rng := rand.New(rand.NewSource(seed + int64(start)))
	state := statedir.Dir{Root: out}
	for _, d := range []string{state.Runs(), state.Results()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := start; i < start+n; i++ {
		bead := fmt.Sprintf("bd-%06x", i)
		agent := "claude"
		if rng.Intn(3) == 0 {
			agent = "codex"
		}
		model := models[agent][rng.Intn(len(models[agent]))]
		prompt := fmt.Sprintf("%s component %d of the service %s", verbs[rng.Intn(len(verbs))], i, strings.Repeat("x", 20+rng.Intn(200)))
		start := base.Add(time.Duration(i) * 7 * time.Minute)
		dur := 60 + rng.Intn(3600)
		finish := start.Add(time.Duration(dur) * time.Second)
		attempt := 1 + rng.Intn(3)/2
		status := []string{"done", "done", "done", "failed", "timeout", "running"}[rng.Intn(6)]
		tmpl := templates[rng.Intn(len(templates))]
		reason := "status-file"
		if status == "failed" {
			reason = reasons[rng.Intn(len(reasons))]
		} else if status == "timeout" {
			reason = "watch-timeout-3600s"
		} else if status == "running" {
			reason = "dispatched"
		}
		var run, res map[string]any
		if rng.Intn(100) < legacyPct {
			run = map[string]any{"bead": bead, "agent": agent, "model": model, "repo": "/srv/repo",
				"started_at": start.Format(time.RFC3339), "attempt": attempt, "prompt": prompt}
			res = map[string]any{"bead": bead, "status": status, "finished_at": finish.Format(time.RFC3339), "attempt": attempt}
		} else {
			fin, durv, exit := any(finish.Format(time.RFC3339)), any(dur), any(0)
			if status == "running" {
				fin, durv, exit = nil, nil, nil
			} else if status != "done" {
				exit = 1
			}
			var failure any
			if status == "failed" || status == "timeout" {
				failure = reason
			}
			var tmplv any
			if tmpl != "" {
				tmplv = tmpl
			}
			sum := sha256.Sum256([]byte(prompt))
			short := prompt
			if len(short) > 200 {
				short = short[:200]
			}
			run = map[string]any{"schema_version": 1, "bead": bead, "agent": agent, "model": model,
				"repo": "/srv/repo", "prompt": short, "prompt_hash": hex.EncodeToString(sum[:]),
				"started_at": start.Format(time.RFC3339), "finished_at": fin, "duration_seconds": durv,
				"status": status, "attempt": attempt, "max_retries": 2, "session_name": "agent-" + bead,
				"result_file": statedir.Dir{Root: "state"}.Result(bead), "exit_code": exit, "output_summary": nil,
				"failure_reason": failure, "template_name": tmplv, "prompt_full": prompt}
			res = map[string]any{"schema_version": 1, "bead": bead, "agent": agent, "status": status,
				"reason": reason, "started_at": start.Format(time.RFC3339), "finished_at": fin,
				"duration_seconds": durv, "attempt": attempt, "max_retries": 2,
				"will_retry": status != "done" && status != "running" && attempt < 2, "exit_code": exit,
				"session_name": "agent-" + bead, "output_summary": nil}
		}
		if rng.Intn(100) < invalidPct {
			run["attempt"] = "one"
		}
		if err := write(state.Run(bead), run); err != nil {
			return err
		}
		if err := write(state.Result(bead), res); err != nil {
			return err
		}
	}
	return nil
}

func write(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
