package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Dir is a repository's .claude/ralph directory and the names of its files.
type Dir struct{ Root string }

// In is the queue directory of repo: <repo>/.claude/ralph.
func In(repo string) Dir { return Dir{Root: filepath.Join(repo, ".claude", "ralph")} }

// TaskQueue is task-queue-<plan>.json.
func (d Dir) TaskQueue(plan string) string { return d.join("task-queue-" + plan + ".json") }

// RetryQueue is retry-queue-<plan>.json.
func (d Dir) RetryQueue(plan string) string { return d.join("retry-queue-" + plan + ".json") }

// Progress is progress-<plan>.json.
func (d Dir) Progress(plan string) string { return d.join("progress-" + plan + ".json") }

// Archive is archive/, where a plan's task queue is archived once every task is done.
func (d Dir) Archive() string { return d.join("archive") }

// Archived is the archive of plan's task queue completed at stamp (20060102T150405Z):
// archive/task-queue-<plan>-<stamp>.json.
func (d Dir) Archived(plan, stamp string) string {
	return filepath.Join(d.Archive(), "task-queue-"+plan+"-"+stamp+".json")
}

// AgentState is agent-state-<agent>.json. The seed names it by agent alone, so two plans run at
// once in one repository would share agent-1's file: RunnerLock keeps to one runner a directory.
func (d Dir) AgentState(agent string) string { return d.join("agent-state-" + agent + ".json") }

// Lock is the seed's one lock, task-queue.lock: every change to the queue, retry and progress
// files of any plan is made holding it.
func (d Dir) Lock() string { return d.join("task-queue.lock") }

// RunnerLock is held by the runner working in this directory for its whole life (an flock: it
// goes with the runner, however it dies).
func (d Dir) RunnerLock() string { return d.join("runner.lock") }

// ErrRunnerActive is returned by LockRunner when a runner holds the directory.
var ErrRunnerActive = errors.New("a runner is at work")

// LockRunner takes the runner lock, without waiting: ErrRunnerActive when a live runner holds
// it. The runner holds it for its whole life; init --force takes it so as not to pull a queue
// from under one.
func (d Dir) LockRunner(ctx context.Context) (func() error, error) {
	if err := d.Mkdir(); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	unlock, err := fsx.LockFile(lctx, d.RunnerLock())
	if errors.Is(err, fsx.ErrLocked) {
		return nil, fmt.Errorf("%w in %s ('ralph queue run' holds %s); wait for it to finish, or stop it (it leaves its agents' claims to the next run)", ErrRunnerActive, d.Root, d.RunnerLock())
	}
	return unlock, err
}

func (d Dir) join(name string) string { return filepath.Join(d.Root, name) }

// Mkdir creates the directory (0700) and checks that it and .claude are real directories of
// the user's, never followed links.
func (d Dir) Mkdir() error {
	if err := statedir.Mkdir(filepath.Dir(d.Root)); err != nil {
		return err
	}
	return statedir.Mkdir(d.Root)
}

// Kinds of the files, as validate-state --kind names them.
const (
	KindTaskQueue  = "task-queue"
	KindRetryQueue = "retry-queue"
	KindProgress   = "progress"
	KindAgentState = "agent-state"
)

// Store is one plan's queue files. Its transactions (Tx) serialise on the directory's lock,
// across processes and across the goroutines of one. The queue last written is kept in memory,
// with its file's identity: the next transaction reads the file again only if another process
// replaced it since.
//
// Every document is checked against its embedded schema before it is written (check.go): one
// that does not satisfy it is an error wrapping a *schema.InvalidError, and the transaction
// writes none of its files.
type Store struct {
	Dir  Dir
	Plan string
	// Guard makes the store check each version of the task queue another process wrote
	// against the tasks it holds (guard.go): set by the runner, whose agents work in the
	// repository and can write the file. Warn receives what the guard put back.
	Guard bool
	Warn  func(msg string)

	mu     sync.Mutex
	cached *Queue
	stat   fs.FileInfo // the file's, as cached was read or written
	buf    []byte      // the last encoding's buffer, reused
	olds   int         // old queue files held (holdOld)
	// dirSyncs counts the directory fsyncs of the transactions (tests).
	dirSyncs int
	held     map[string]Task
}

// sameVersion says whether a and b are stats of one version of a file: a rename gives it a new
// inode. b is nil when there is none.
func sameVersion(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// New returns the store of plan in d. (RALPH_QUEUE_VALIDATE=1 once turned the schema checks on;
// they are always on, and the variable is no longer read.)
func New(d Dir, plan string) *Store {
	return &Store{Dir: d, Plan: plan}
}

// ErrNoQueue is returned when the plan has no task queue.
var ErrNoQueue = errors.New("no task queue")

// Tx is one transaction: the files it read, and which it changed.
type Tx struct {
	s                      *Store
	q                      *Queue
	r                      *RetryQueue
	p                      *Progress
	qDirty, rDirty, pDirty bool
	lazy                   bool
}

// Lazy says that the transaction's writes need not be durable before it returns: the files'
// contents are fsynced before they are renamed into place, as always (a power cut leaves the old
// file or the new one, whole), but the directory's fsync, which makes the rename itself durable,
// is left to the background. A claim is lazy, its progress file's write too (it names the
// agent's task): one lost to a power cut leaves its task pending and the records of its attempt
// closed as supervisor-lost, and the task is claimed again. It takes a millisecond off a claim
// at 10,000 tasks, and a directory fsync off every claim (the progress file's write was not
// lazy).
func (tx *Tx) Lazy() { tx.lazy = true }

// Queue returns the task queue, read from its file (or the copy in memory when the file is the
// one written last). ErrNoQueue when there is none.
func (tx *Tx) Queue() (*Queue, error) {
	if tx.q != nil {
		return tx.q, nil
	}
	s := tx.s
	path := s.Dir.TaskQueue(s.Plan)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("plan %s: %w (%s); run 'ralph queue init PLAN_FILE' first", s.Plan, ErrNoQueue, path)
	}
	if err != nil {
		return nil, err
	}
	if s.cached != nil && sameVersion(fi, s.stat) {
		tx.q = s.cached
		return tx.q, nil
	}
	s.cached = nil
	doc, err := statedir.ReadFile(path, fsx.MaxStateFile)
	if err != nil {
		return nil, fmt.Errorf("reading the task queue: %w", err) // err names the file
	}
	q, err := DecodeQueue(bytes.TrimSpace(fsx.StripBOM(doc)))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w; repair it (validate-state --kind task-queue %s) or start the plan over (ralph queue init --force PLAN_FILE)", path, err, path)
	}
	if s.Guard {
		if s.held != nil && s.guard(q) {
			tx.qDirty = true
		}
		s.hold(q)
	}
	tx.q = q
	return q, nil
}

// SetQueue replaces the queue, to be written at the end of the transaction.
func (tx *Tx) SetQueue(q *Queue) { tx.q, tx.qDirty = q, true }

// ChangedQueue marks the queue to be written at the end of the transaction.
func (tx *Tx) ChangedQueue() { tx.qDirty = true }

// Retry returns the retry queue (empty when there is none); ChangedRetry marks it to be written.
func (tx *Tx) Retry() (*RetryQueue, error) {
	r, err := readOnce(&tx.r, tx.s.Dir.RetryQueue(tx.s.Plan), RetryQueue{PlanID: tx.s.Plan})
	if err == nil && r.Retries == nil {
		r.Retries = []Retry{}
	}
	return r, err
}

// Drop clears task id's entries from the retry queue (it succeeded, is out of retries, or was
// retried or skipped by hand) and says whether there were any.
func (rq *RetryQueue) Drop(id string) bool {
	n := len(rq.Retries)
	rq.Retries = slices.DeleteFunc(rq.Retries, func(e Retry) bool { return e.TaskID == id })
	return len(rq.Retries) != n
}

// SetRetry replaces the retry queue, unread, to be written at the end of the transaction.
func (tx *Tx) SetRetry(r *RetryQueue) { tx.r, tx.rDirty = r, true }

// SetProgress replaces the progress file, unread, to be written at the end of the transaction.
func (tx *Tx) SetProgress(p *Progress) { tx.p, tx.pDirty = p, true }

// ChangedRetry marks the retry queue to be written.
func (tx *Tx) ChangedRetry() { tx.rDirty = true }

// Progress returns the progress file (nil Agents and a zero StartedAt when there is none);
// ChangedProgress marks it to be written.
func (tx *Tx) Progress() (*Progress, error) {
	p, err := readOnce(&tx.p, tx.s.Dir.Progress(tx.s.Plan), Progress{PlanID: tx.s.Plan, Phase: PhaseImplementation})
	if err == nil && p.Agents == nil {
		p.Agents = []Agent{}
	}
	return p, err
}

// ChangedProgress marks the progress file to be written.
func (tx *Tx) ChangedProgress() { tx.pDirty = true }

// readOnce is *v, read from the file at path (def when there is none) unless the transaction
// read it already.
func readOnce[T any](v **T, path string, def T) (*T, error) {
	if *v == nil {
		if _, err := readJSON(path, &def); err != nil {
			return nil, err
		}
		*v = &def
	}
	return *v, nil
}

// readJSON decodes the state file at path into v, and says whether it read one: a missing file
// leaves v as it is, and so does an empty one (read).
func readJSON(path string, v any) (read bool, err error) {
	doc, err := statedir.ReadFile(path, fsx.MaxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading a queue file: %w", err) // err names the file
	}
	if doc = bytes.TrimSpace(fsx.StripBOM(doc)); len(doc) == 0 {
		return true, nil
	}
	if err := decodeJSON(doc, v); err != nil {
		return false, fmt.Errorf("reading %s: %w; repair it or move it away", path, err)
	}
	return true, nil
}

// Update runs fn in a transaction under the directory's lock and writes what it changed, each
// file once, atomically: the retry queue and the progress first, the task queue (the truth) last.
// fn's error is returned and nothing is written; so is the error of a document that does not
// satisfy its schema (every one is checked before the first is written).
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		if err != nil {
			// fn may have changed the queue in memory before it failed, or the write failed:
			// the next transaction reads the file.
			s.cached = nil
		}
	}()
	if err := s.Dir.Mkdir(); err != nil {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	unlock, err := fsx.LockFile(lctx, s.Dir.Lock())
	if err != nil {
		return fmt.Errorf("taking %s: %w", s.Dir.Lock(), err)
	}
	defer unlock()
	tx := &Tx{s: s}
	if err := fn(tx); err != nil {
		return err
	}
	files, changed, err := s.encode(tx)
	if err != nil {
		return err
	}
	// Written while the lock is held: write returns once the directory's fsync is done (or,
	// for a lazy transaction, handed to a goroutine), before unlock.
	return s.write(tx, files, changed)
}

// txFile is a file as a transaction writes it.
type txFile struct {
	path, kind string
	doc        []byte
}

// encode encodes what tx changed and checks every document against its schema before the first
// is written: the retry queue and the progress, when changed, then the task queue (the truth,
// into s.buf), in the order they are written. changed are the tasks whose encoding is new
// (checked now), the ones the transaction changed.
func (s *Store) encode(tx *Tx) (files []txFile, changed []int, err error) {
	if tx.rDirty {
		files = append(files, txFile{s.Dir.RetryQueue(s.Plan), KindRetryQueue, marshal(tx.r)})
	}
	if tx.pDirty {
		files = append(files, txFile{s.Dir.Progress(s.Plan), KindProgress, marshal(tx.p)})
	}
	for _, f := range files {
		if err := Check(f.kind, f.doc); err != nil {
			return nil, nil, fmt.Errorf("not writing %s: %w", f.path, err)
		}
	}
	if tx.qDirty {
		s.cached = nil
		if s.buf, changed, err = tx.q.appendChecked(s.buf[:0]); err != nil {
			return nil, nil, fmt.Errorf("not writing %s: %w", s.Dir.TaskQueue(s.Plan), err)
		}
		files = append(files, txFile{s.Dir.TaskQueue(s.Plan), KindTaskQueue, s.buf})
	}
	return files, changed, nil
}

// write writes files; with s.Guard, the tasks changed are then the ones the guard holds, and the
// task queue is kept in memory.
func (s *Store) write(tx *Tx, files []txFile, changed []int) error {
	// The files are written (each fsynced, then renamed into place) in this order, and their
	// directory, where all three are, is fsynced once after the last rename: the transaction is
	// durable when Update returns, for one directory fsync where each file cost its own. A lazy
	// transaction leaves that fsync to a goroutine (see Lazy).
	var syncDir func()
	defer func() {
		if syncDir != nil {
			s.dirSyncs++
			if tx.lazy {
				go syncDir()
			} else {
				syncDir()
			}
		}
	}()
	for _, f := range files {
		release := func() {}
		if f.kind == KindTaskQueue {
			release = s.holdOld(f.path)
		}
		sync, err := fsx.WriteFileAtomicLazy(f.path, f.doc, 0o600)
		release()
		if err != nil {
			return err
		}
		syncDir = sync
	}
	if tx.qDirty && s.Guard {
		if s.held == nil {
			s.hold(tx.q)
		}
		for _, i := range changed {
			s.held[tx.q.tasks[i].ID] = tx.q.tasks[i]
		}
	}
	// The task queue tx wrote is kept in memory as the version of the file just written, and one
	// it read and did not change when none is kept (a write drops the one kept) as the version of
	// the file it was read from, unless the file changed after it was read (the stat would then
	// be the newer one's).
	if tx.q != nil && s.cached == nil {
		if fi, err := os.Lstat(s.Dir.TaskQueue(s.Plan)); err == nil {
			s.cached, s.stat = tx.q, fi
		}
	}
	return nil
}

// View reads the task queue without the lock (readers need none: every write is a rename).
func (s *Store) View() (*Queue, error) {
	return (&Tx{s: &Store{Dir: s.Dir, Plan: s.Plan}}).Queue()
}

// ViewProgress reads the progress file without the lock.
func (s *Store) ViewProgress() (*Progress, error) {
	return (&Tx{s: s}).Progress()
}

// ViewRetry reads the retry queue without the lock.
func (s *Store) ViewRetry() (*RetryQueue, error) {
	return (&Tx{s: s}).Retry()
}

func marshal(v any) []byte {
	b, _ := json.MarshalIndent(v, "", "  ")
	return append(b, '\n')
}

// holdOld links the queue file about to be replaced to a hidden name, and returns what lets go
// of it. The rename over a 2 MB queue would otherwise free the old file's blocks while the lock
// is held (a millisecond of a 5 ms claim); the link is removed after, by a goroutine. A file left
// by a crash (".task-queue-<plan>.json.old-N") is removed by the next store's first write.
func (s *Store) holdOld(path string) func() {
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Size() < 1<<20 {
		return func() {}
	}
	s.olds++
	old := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.old-%d", filepath.Base(path), s.olds))
	if s.olds == 1 {
		leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".old-*"))
		for _, l := range leftovers {
			os.Remove(l)
		}
	}
	if os.Link(path, old) != nil {
		return func() {}
	}
	return func() { go os.Remove(old) }
}

// ArchiveQueue copies the plan's task queue, as it is now, into the archive (seed 004: "archived
// after plan completion"), checked against its schema, written atomically, the archive
// directory a real one of the user's (0700); the queue itself stays, for status and add. It
// returns the archive's path.
func (s *Store) ArchiveQueue(ctx context.Context, at time.Time) (string, error) {
	path := s.Dir.Archived(s.Plan, at.UTC().Format("20060102T150405Z"))
	err := s.Update(ctx, func(tx *Tx) error {
		q, err := tx.Queue()
		if err != nil {
			return err
		}
		doc, _, err := q.appendChecked(nil)
		if err != nil {
			return err
		}
		if err := statedir.Mkdir(s.Dir.Archive()); err != nil {
			return err
		}
		return fsx.WriteFileAtomic(path, doc, 0o600)
	})
	if err != nil {
		return "", fmt.Errorf("archiving the task queue of %s: %w", s.Plan, err)
	}
	return path, nil
}

// WriteAgentState writes an agent's state file under its own lock, agent-state-<agent>.lock.
func (s *Store) WriteAgentState(ctx context.Context, a *AgentState) error {
	if err := s.Dir.Mkdir(); err != nil {
		return err
	}
	if a.Context.FilesModified == nil {
		a.Context.FilesModified = []string{}
	}
	if a.Context.CommitsMade == nil {
		a.Context.CommitsMade = []string{}
	}
	doc := marshal(a)
	if err := Check(KindAgentState, doc); err != nil {
		return fmt.Errorf("not writing %s's state: %w", a.AgentID, err)
	}
	// The file is written whole (fsynced, then renamed into place) under its lock; the rename
	// is made durable by a goroutine (the directory's fsync), as a claim's: the file says what
	// the agent is doing for the tools that look, and a power cut that undid its last rename
	// leaves the one before, which the agent's next write replaces. An agent writes it twice a
	// task.
	syncDir, err := fsx.WriteLockedByLazy(ctx, s.Dir.join("agent-state-"+a.AgentID+".lock"), s.Dir.AgentState(a.AgentID), doc, 0o600)
	if err != nil {
		return err
	}
	go syncDir()
	return nil
}

// ReadAgentState reads an agent's state file; nil when there is none.
func (s *Store) ReadAgentState(agent string) (*AgentState, error) {
	var a AgentState
	if read, err := readJSON(s.Dir.AgentState(agent), &a); !read {
		return nil, err
	}
	return &a, nil
}

// RemoveAgentState removes an agent's state file (the seed deletes it when the agent completes).
func (s *Store) RemoveAgentState(agent string) {
	os.Remove(s.Dir.AgentState(agent))
}
