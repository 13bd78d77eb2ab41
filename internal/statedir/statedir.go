// Package statedir names every file of the toolkit's state directories, so that no tool joins
// "runs" or "attempts" by hand, and holds the one rule for the names that become file names,
// tmux targets and git refs (CheckName).
//
// A state directory (dispatch, validate-state, analyze-runs: --state-dir, env STATE_DIR, default
// ./state) is laid out so:
//
//	runs/<bead>.json                  run record            (Dir.Run)
//	results/<bead>.json               result record         (Dir.Result)
//	results/<bead>-verify.json        verification output   (Dir.Verify)
//	attempts/<bead>/run-<N>.json      earlier attempts      (Dir.AttemptRun)
//	attempts/<bead>/result-<N>.json                         (Dir.AttemptResult)
//	attempts/<bead>/output-<N>.log                          (Dir.AttemptOutput)
//	attempts/<bead>/unreadable-<T>/   a record no reader could read, set aside (Dir.AttemptAside)
//	logs/<bead>.log                   current attempt's output (Dir.Log)
//	prompts/<bead>.txt                prompt for agents that read a file (Dir.Prompt)
//	locks/<bead>.lock                 the bead's lock        (Dir.BeadLock)
//	locks/runs/<bead>.lock            a run record's lock    (Dir.RunLock)
//	locks/results/<bead>.lock         a result record's lock (Dir.ResultLock)
//	supervisors/<bead>.json           live supervisor's registry entry (Dir.Supervisor)
//	handoff/<random>.sock             one-time sockets handing a supervisor its spec (Dir.Handoffs)
//	reserves/<bead>                   supervisor's disk reserve (Dir.Reserve)
//	sockets/<bead>.sock               supervisor's control socket (Dir.Socket)
//	schemas/<kind>.schema.json        the user's schemas     (Dir.Schema)
//	template-scores.json              analyze-runs --write-scores (Dir.TemplateScores)
//	watch/                            dispatch.sh's watcher files (Dir.Watch)
//	truthsayer/<bead>.log             Truthsayer's findings while bead's agent runs (Dir.Truthsayer)
//	cache/analyze-runs.db             analyze-runs' cache of what it read (Dir.ReportCache)
//
// The rule that keeps names apart: each directory holds one kind of file, all named
// <name><suffix> with the kind's one suffix, and its subdirectories (locks/runs) carry no suffix.
// A name has no '/' and does not start with '.' (CheckName), so no two kinds of file, no two
// beads, no subdirectory and no temp file of an atomic write (".<file>.tmp-*") can share a path.
// Before this layout the registry held <bead>.json, <bead>.spec.json and <bead>.json.reserve
// side by side, so bead "y.spec"'s entry was bead y's hand-over file; and every record had a
// <bead>.json.lock beside it in runs/, which doubled `ls state/runs | wc -l`. The one exception,
// kept for compatibility, is results/<bead>-verify.json beside results/<bead>.json; CheckName
// refuses bead ids ending in "-verify" instead.
//
// Records, attempts, logs, prompts, schemas, template-scores.json and watch/ are where
// dispatch.sh, validate-state.sh and analyze-runs.sh put them; the rest is ours. Directories are
// created 0700 (MkdirFor): the files hold prompts and environments.
//
// Nothing in a state directory is trusted to be what its name says (see check.go): a writer
// checks that the directories it writes in are real directories of its own user (Dir.Check,
// MkdirFor), never follows a link at a file it creates or rewrites (it creates the file fresh,
// or renames a new one over it), and reads state files with ReadFile: regular files only, never
// through a link, never blocking, never past a bound.
//
// swarm and ralph keep their state in $SWARM_DIR, named by Swarm.
package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentfleet/fleet/internal/fsx"
)

// The subdirectories and suffixes of a state directory. They are not exported: a path is asked
// of Dir, never built.
const (
	runsDir        = "runs"
	resultsDir     = "results"
	attemptsDir    = "attempts"
	logsDir        = "logs"
	promptsDir     = "prompts"
	locksDir       = "locks"
	supervisorsDir = "supervisors"
	handoffDir     = "handoff"
	reservesDir    = "reserves"
	socketsDir     = "sockets"
	schemasDir     = "schemas"
	watchDir       = "watch"
	truthsayerDir  = "truthsayer"
	cacheDir       = "cache"

	recordSuffix = ".json"
	verifySuffix = "-verify"
	lockSuffix   = ".lock"
)

// Dir is a state directory: each method names one of its paths. The zero Root is the current
// directory.
type Dir struct {
	// Root is the state directory itself (the tools' --state-dir, by default ./state).
	Root string
}

func (d Dir) join(elem ...string) string {
	return filepath.Join(append([]string{d.Root}, elem...)...)
}

// Runs is the directory of run records.
func (d Dir) Runs() string { return d.join(runsDir) }

// Run is bead's run record: runs/<bead>.json.
func (d Dir) Run(bead string) string { return d.join(runsDir, bead+recordSuffix) }

// Results is the directory of result records.
func (d Dir) Results() string { return d.join(resultsDir) }

// Result is bead's result record: results/<bead>.json.
func (d Dir) Result(bead string) string { return d.join(resultsDir, bead+recordSuffix) }

// Verify is the verification output dispatch.sh left beside bead's result:
// results/<bead>-verify.json.
func (d Dir) Verify(bead string) string {
	return d.join(resultsDir, bead+verifySuffix+recordSuffix)
}

// Attempts is the directory of all beads' earlier attempts.
func (d Dir) Attempts() string { return d.join(attemptsDir) }

// AttemptDir is where bead's earlier attempts are kept: attempts/<bead>.
func (d Dir) AttemptDir(bead string) string { return d.join(attemptsDir, bead) }

// AttemptRun is the run record of bead's attempt n: attempts/<bead>/run-<n>.json.
func (d Dir) AttemptRun(bead string, n int) string {
	return d.join(attemptsDir, bead, "run-"+strconv.Itoa(n)+recordSuffix)
}

// AttemptResult is the result record of bead's attempt n: attempts/<bead>/result-<n>.json.
func (d Dir) AttemptResult(bead string, n int) string {
	return d.join(attemptsDir, bead, "result-"+strconv.Itoa(n)+recordSuffix)
}

// AttemptOutput is the agent's output of bead's attempt n: attempts/<bead>/output-<n>.log.
func (d Dir) AttemptOutput(bead string, n int) string {
	return d.join(attemptsDir, bead, "output-"+strconv.Itoa(n)+".log")
}

// AttemptAside is where a record of bead that no reader could read is set aside, with what
// belonged to its attempt (run.json, result.json, output.log): attempts/<bead>/unreadable-<stamp>,
// stamp its UTC time (20260203T100000Z). No tool reads it as an attempt (AttemptFile), and
// nothing in it is ever replaced.
func (d Dir) AttemptAside(bead, stamp string) string {
	return d.join(attemptsDir, bead, "unreadable-"+stamp)
}

// Logs is the directory of the agents' output logs.
func (d Dir) Logs() string { return d.join(logsDir) }

// Log is the agent's full output for bead's current attempt: logs/<bead>.log.
func (d Dir) Log(bead string) string { return d.join(logsDir, bead+".log") }

// Prompts is the directory of prompt files.
func (d Dir) Prompts() string { return d.join(promptsDir) }

// Prompt is where bead's prompt is written for agents that read it from a file:
// prompts/<bead>.txt.
func (d Dir) Prompt(bead string) string { return d.join(promptsDir, bead+".txt") }

// Locks is the directory of locks.
func (d Dir) Locks() string { return d.join(locksDir) }

// BeadLock is bead's lock, taken with fsx.LockFile: held while a dispatch sets up an attempt,
// while a supervisor writes its final records and while reconcile judges the bead, so that they
// never interleave: locks/<bead>.lock (the file fsx.Lock(locks/<bead>) took before this package).
func (d Dir) BeadLock(bead string) string { return d.join(locksDir, bead+lockSuffix) }

// RunLock is the lock every writer of bead's run record takes: locks/runs/<bead>.lock.
func (d Dir) RunLock(bead string) string { return d.join(locksDir, runsDir, bead+lockSuffix) }

// ResultLock is the lock every writer of bead's result record takes: locks/results/<bead>.lock.
func (d Dir) ResultLock(bead string) string {
	return d.join(locksDir, resultsDir, bead+lockSuffix)
}

// Supervisors is the registry of live supervisors.
func (d Dir) Supervisors() string { return d.join(supervisorsDir) }

// Supervisor is the registry entry of bead's live supervisor: supervisors/<bead>.json.
func (d Dir) Supervisor(bead string) string { return d.join(supervisorsDir, bead+recordSuffix) }

// Handoffs is the directory of the one-time sockets through which a starter hands its
// supervisor the spec (prompt and environment), so that the spec never lies on disk. The
// sockets are named at random, not by bead.
func (d Dir) Handoffs() string { return d.join(handoffDir) }

// Reserves is the directory of the supervisors' disk reserves.
func (d Dir) Reserves() string { return d.join(reservesDir) }

// Reserve is the space bead's supervisor holds so that a full disk cannot keep its final
// records from being written: reserves/<bead>.
func (d Dir) Reserve(bead string) string { return d.join(reservesDir, bead) }

// Sockets is the directory of the supervisors' control sockets.
func (d Dir) Sockets() string { return d.join(socketsDir) }

// Socket is bead's supervisor's control socket: sockets/<bead>.sock, or for a bead id longer
// than 64 bytes sockets/<first 40 bytes>~<hash>.sock, so that the socket's name (the part
// ListenUnix cannot shorten) stays well inside the 107 bytes of a socket address. '~' is in no
// bead id, so a shortened name is never another bead's.
func (d Dir) Socket(bead string) string {
	const keep, max = 40, 64
	name := bead
	if len(bead) > max {
		name = bead[:keep] + "~" + shortHash(bead)
	}
	return d.join(socketsDir, name+".sock")
}

// Schemas is the directory of the user's schemas, which validate-state prefers to the embedded
// ones.
func (d Dir) Schemas() string { return d.join(schemasDir) }

// Schema is the user's schema of kind ("run", "result", ...): schemas/<kind>.schema.json.
func (d Dir) Schema(kind string) string { return d.join(schemasDir, kind+".schema.json") }

// TemplateScores is the file analyze-runs --write-scores (score-templates.sh) writes.
func (d Dir) TemplateScores() string { return d.join("template-scores.json") }

// Watch is the directory dispatch.sh created for its watcher (state/watch).
func (d Dir) Watch() string { return d.join(watchDir) }

// Cache is the directory of the caches: what a tool keeps to do less next time, never the
// source of truth (it may be deleted at any time).
func (d Dir) Cache() string { return d.join(cacheDir) }

// ReportCache is analyze-runs' cache of what it read per record pair: cache/analyze-runs.db.
func (d Dir) ReportCache() string { return d.join(cacheDir, "analyze-runs.db") }

// LegacySpec is where supervisors before the handoff sockets found their spec:
// supervisors/<bead>.spec.json. Only for clearing leftovers.
func (d Dir) LegacySpec(bead string) string {
	return d.join(supervisorsDir, bead+".spec"+recordSuffix)
}

// LegacyReserve is where supervisors before this layout kept their disk reserve:
// supervisors/<bead>.json.reserve. Only for clearing leftovers.
func (d Dir) LegacyReserve(bead string) string {
	return d.join(supervisorsDir, bead+recordSuffix+".reserve")
}

// LegacyRecordLock is the sidecar lock record writers took before this layout, beside the
// record (runs/<bead>.json.lock). Readers of runs/ and results/ must still skip such files.
func LegacyRecordLock(record string) string { return record + lockSuffix }

// RecordFile is the name of bead's record in runs/ and in results/ (Run and Result are the same
// name joined to the directory): for readers that open each record relative to the directory.
func RecordFile(bead string) string { return bead + recordSuffix }

// RecordBead is the bead of a file listed in runs/ or results/: "<bead>.json" gives <bead>.
// Hidden files (temp files of a write in progress), lock files and backups are not records. The
// bead is not checked against CheckName: the tools read whatever records a directory holds.
func RecordBead(file string) (bead string, ok bool) {
	bead, ok = strings.CutSuffix(file, recordSuffix)
	return bead, ok && bead != "" && !strings.HasPrefix(file, ".")
}

// VerifyBead tells a verification output's name from a result's: "<bead>-verify" (a name
// RecordBead gave) is the verification of <bead>.
func VerifyBead(name string) (bead string, ok bool) {
	bead, ok = strings.CutSuffix(name, verifySuffix)
	return bead, ok && bead != ""
}

// DirKind is the kind of record ("run" or "result") a directory of that base name holds, or "".
// validate-state guesses the kind of a path given to it by it.
func DirKind(base string) string {
	switch base {
	case runsDir:
		return "run"
	case resultsDir:
		return "result"
	}
	return ""
}

// Beads lists the beads that have a file <bead><suffix> in dir (Supervisors with ".json",
// Runs with ".json", Logs with ".log"), sorted. Names that are not valid bead ids (CheckName)
// and hidden files are left out; a missing directory has none.
func Beads(dir, suffix string) ([]string, error) {
	beads, err := fsx.Names(dir, func(n string) (string, bool) {
		bead, ok := strings.CutSuffix(n, suffix)
		return bead, ok && !strings.HasPrefix(n, ".") && CheckName(KindBead, bead) == nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	return beads, nil
}

// MkdirFor creates the directory that will hold path, and any missing parents, private to the
// user (0700): state directories hold prompts and environments. The directory must then be a
// real directory (not a link) owned by the user (CheckDir): a file is never created in a
// directory another user could plant links in, or that leads somewhere else.
func MkdirFor(path string) error {
	return Mkdir(filepath.Dir(path))
}

// Mkdir is MkdirFor for the directory dir itself.
func Mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating state directory: %w", err)
	}
	return CheckDir(dir)
}
