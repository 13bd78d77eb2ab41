// Package manifest reads a work.yaml manifest: a named batch of tasks, each with a prompt, a
// branch, a priority and the tasks it depends on, which `swarm run` executes. Load checks the
// whole manifest before anything starts: required fields, unique task ids and branches,
// dependencies that exist, no cycles (named by their path, "a -> b -> a"), priorities, prompt
// files (inside the repository, LoadWith), durations, branch names git reads as nothing but a
// branch (CheckBranch), no key given twice, no control character in a name. Every problem is an
// *Error naming the file and line it is on.
//
//	name: Sprint 47
//	repo: .                      # a path (relative to the manifest) or a git URL
//	base_branch: main
//	test: go test ./...          # optional: swarm run merge's test command (no shell)
//	defaults: {agent: claude, model: sonnet, timeout: 30m, retries: 1}
//	tasks:
//	  - id: feature-a
//	    prompt: "Implement ..."  # or prompt_file: tasks/a.md (relative to the manifest, inside its repository)
//	    branch: feature/a
//	    priority: high           # high, medium (the default), low
//	    depends_on: []
package manifest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/taskgraph"
	"gopkg.in/yaml.v3"
)

// Priorities, highest first.
const (
	High   = "high"
	Medium = "medium"
	Low    = "low"
)

// Rank orders priorities: high 0, medium 1, low 2.
func Rank(p string) int {
	switch p {
	case High:
		return 0
	case Low:
		return 2
	}
	return 1
}

// Defaults are what a task that sets none runs with.
type Defaults struct {
	Agent   string
	Model   string
	Timeout time.Duration // 0: none
	Retries int           // attempts after the first
}

// Task is one task of a manifest.
type Task struct {
	ID        string
	Prompt    string
	Branch    string
	Priority  string
	DependsOn []string
	Agent     string
	Model     string
	Timeout   time.Duration
	Retries   int
	// AgentHint is the agent or host preferred for the task (a remote host's name).
	AgentHint string
	// Line is where the task starts in the manifest.
	Line int
}

// Manifest is a checked work.yaml.
type Manifest struct {
	Name       string
	Repo       string // as written; "" when absent (the current repository)
	BaseBranch string
	Defaults   Defaults
	// MaxParallel is the manifest's max_parallel, 0 when it sets none.
	MaxParallel int
	// Test is the repository's test command, as written ("" : none): swarm run merge runs it
	// after each merge (its words split without a shell).
	Test  string
	Tasks []Task
	// Path is the manifest file's path, as given to Load.
	Path string
	// index is where each task id is in Tasks (Task), made by Parse.
	index map[string]int
}

// Task returns the task id, or nil. A manifest Parse made looks it up in its index (a scan
// per look-up made a run's thousands of look-ups quadratic); one made otherwise, or whose
// Tasks were changed since, is scanned.
func (m *Manifest) Task(id string) *Task {
	if i, ok := m.index[id]; ok && i < len(m.Tasks) && m.Tasks[i].ID == id {
		return &m.Tasks[i]
	}
	for i := range m.Tasks {
		if m.Tasks[i].ID == id {
			return &m.Tasks[i]
		}
	}
	return nil
}

// Error is a problem at a line of a manifest file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// ErrInvalid is matched (errors.Is) by every error of a manifest that is not right.
var ErrInvalid = errors.New("invalid manifest")

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Errors are all the problems of a manifest, in the order of their lines.
type Errors []*Error

// Error is the first problem, and how many more there are: one line.
func (es Errors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	return fmt.Sprintf("%s (and %d more problems)", es[0].Error(), len(es)-1)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (es Errors) Is(target error) bool { return target == ErrInvalid }

// MaxSize is the largest manifest (and prompt file) read.
const MaxSize = 4 << 20

// Options are how Load reads a manifest's prompt files.
type Options struct {
	// Root is the directory every prompt_file must be inside: the repository the manifest is
	// in. "" is the manifest's own directory.
	Root string
	// AnyPromptFile lets a prompt_file name any file the user can read, anywhere (swarm run
	// --allow-outside-prompts). Without it a manifest (one from a pull request, in CI) cannot
	// send /etc/shadow or ~/.ssh/id_ed25519 to the agent, the hosts and the state file.
	AnyPromptFile bool
}

// Load reads and checks the manifest at path, its prompt files inside its own directory
// (LoadWith).
func Load(path string) (*Manifest, error) { return LoadWith(path, Options{}) }

// LoadWith reads and checks the manifest at path. Prompt files are read relative to its
// directory, and must be inside o.Root (unless o.AnyPromptFile): no absolute path, "..", or
// symbolic link that leads out of it.
func LoadWith(path string, o Options) (*Manifest, error) {
	data, err := readRegular(path)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest: %w", err)
	}
	dir := filepath.Dir(path)
	if o.AnyPromptFile {
		return Parse(path, data, func(name string) ([]byte, error) {
			if !filepath.IsAbs(name) {
				name = filepath.Join(dir, name)
			}
			return readRegular(name)
		})
	}
	root := o.Root
	if root == "" {
		root = dir
	}
	return Parse(path, data, func(name string) ([]byte, error) { return readInside(root, dir, name) })
}

// readRegular reads a regular file, never through a final link, at most MaxSize bytes.
func readRegular(path string) ([]byte, error) { return statedir.ReadFile(path, MaxSize) }

// readInside reads the prompt file name (relative to the manifest's directory dir) as
// readRegular does, if it is inside root: the path is taken apart from root's real path, and
// opened through an os.Root, which follows no link out of it.
func readInside(root, dir, name string) ([]byte, error) {
	realRoot, err := realPath(root)
	if err != nil {
		return nil, err
	}
	path := name
	if !filepath.IsAbs(path) {
		// The manifest's own directory is the user's word, links and all.
		realDir, err := realPath(dir)
		if err != nil {
			return nil, err
		}
		path = filepath.Join(realDir, path)
	}
	rel, err := filepath.Rel(realRoot, filepath.Clean(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("is outside %s; keep prompt files in the repository, or pass --allow-outside-prompts", root)
	}
	r, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if fi, err := r.Lstat(rel); err != nil {
		return nil, outsideOr(err, root)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s, which is not read)", statedir.ErrNotRegular, statedir.KindOf(fi.Mode()))
	}
	// Non-blocking: a FIFO put there between the look and the open is not waited on.
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, outsideOr(err, root)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%w (%s, which is not read)", statedir.ErrNotRegular, statedir.KindOf(fi.Mode()))
	case fi.Size() > MaxSize:
		return nil, fmt.Errorf("is %d bytes, over the %d-byte limit of a prompt file", fi.Size(), MaxSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err == nil && len(b) > MaxSize {
		err = fmt.Errorf("grew over the %d-byte limit of a prompt file", MaxSize)
	}
	return b, err
}

// realPath is dir's absolute path, without links.
func realPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// outsideOr says that a path an os.Root refused leads out of root (through a link), or is
// err.
func outsideOr(err error, root string) error {
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("leads out of %s through a symbolic link (or one to an absolute path); keep prompt files in the repository, or pass --allow-outside-prompts", root)
	}
	return err
}

// ReadFunc reads a prompt file named in the manifest.
type ReadFunc func(name string) ([]byte, error)

// taskKeys and topKeys are the keys the manifest knows; any other is an error (a typo would
// otherwise be silently ignored: "depends-on" for "depends_on").
var (
	topKeys     = []string{"name", "repo", "base_branch", "defaults", "default_priority", "max_parallel", "test", "tasks", "description"}
	defaultKeys = []string{"agent", "model", "timeout", "retries"}
	taskKeys    = []string{"id", "prompt", "prompt_file", "branch", "priority", "depends_on", "agent", "model", "timeout", "retries", "agent_hint", "description"}
)

// parser collects a manifest's problems.
type parser struct {
	file string
	errs Errors
	read ReadFunc
}

func (p *parser) errorf(line int, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// Parse checks the manifest data read from file; read reads its prompt files (nil: none may be
// named).
func Parse(file string, data []byte, read ReadFunc) (*Manifest, error) {
	p := &parser{file: file, read: read}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := 0, err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		msg = strings.TrimPrefix(msg, "yaml: ")
		return nil, Errors{{File: file, Line: line, Msg: "not YAML: " + msg}}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		line := 1
		if len(doc.Content) > 0 {
			line = doc.Content[0].Line
		}
		return nil, Errors{{File: file, Line: line, Msg: "a manifest is a mapping with name, base_branch and tasks"}}
	}
	m := &Manifest{Path: file, BaseBranch: "main", Defaults: Defaults{Agent: "claude"}}
	top := doc.Content[0]
	p.uniqueKeys(top)
	defaultPriority := Medium
	var tasks *yaml.Node
	seenName := false
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "name":
			m.Name = p.line(v, "name")
			seenName = true
			if m.Name != "" && slug(m.Name) == "" {
				p.errorf(v.Line, "name %q has no letter or digit; the execution id is made from it", m.Name)
			}
		case "repo":
			m.Repo = p.line(v, "repo")
		case "base_branch":
			m.BaseBranch = p.line(v, "base_branch")
			p.branch(v, m.BaseBranch, "base_branch")
		case "default_priority":
			defaultPriority = p.priority(v)
		case "max_parallel":
			m.MaxParallel = p.positive(v, "max_parallel")
		case "test":
			m.Test = p.line(v, "test")
		case "defaults":
			p.defaults(v, &m.Defaults)
		case "tasks":
			tasks = v
		case "description":
		default:
			p.errorf(k.Line, "unknown key %q; a manifest has %s", k.Value, strings.Join(topKeys, ", "))
		}
	}
	if !seenName {
		p.errorf(top.Line, "name is missing: give the batch a name (it is part of the execution id)")
	}
	switch {
	case tasks == nil:
		p.errorf(top.Line, "tasks is missing: a manifest needs a list of tasks")
	case tasks.Kind != yaml.SequenceNode || len(tasks.Content) == 0:
		p.errorf(tasks.Line, "tasks must be a list of at least one task")
	default:
		for _, item := range tasks.Content {
			if t, ok := p.task(item, m.Defaults, defaultPriority); ok {
				m.Tasks = append(m.Tasks, t)
			}
		}
	}
	p.graph(m)
	if len(p.errs) > 0 {
		sortErrors(p.errs)
		return nil, p.errs
	}
	m.index = make(map[string]int, len(m.Tasks))
	for i, t := range m.Tasks {
		m.index[t.ID] = i
	}
	return m, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func sortErrors(es Errors) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Line < es[j-1].Line; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// uniqueKeys refuses a key given twice in the mapping m: decoded into a Node, yaml.v3 keeps
// both, and the loops over a mapping would take the last ({id: a, id: b} ran b).
func (p *parser) uniqueKeys(m *yaml.Node) {
	first := make(map[string]int, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if line, ok := first[k.Value]; ok {
			p.errorf(k.Line, "key %q is given twice in this mapping (first at line %d); keep one", k.Value, line)
			continue
		}
		first[k.Value] = k.Line
	}
}

// str is v as a non-empty string.
func (p *parser) str(v *yaml.Node, what string) string {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" || v.Value == "" {
		p.errorf(v.Line, "%s must be a non-empty string", what)
		return ""
	}
	return v.Value
}

// line is v as a non-empty string of one line that prints as it reads: no control character
// (a newline, an escape a terminal obeys) and no bidirectional control (U+202E would make
// "fix/\u202egnp.exe" print as "fix/exe.png"). These values are printed (--dry-run, the
// report, the logs) and become names; a prompt alone may hold anything.
func (p *parser) line(v *yaml.Node, what string) string {
	s := p.str(v, what)
	if i := strings.IndexFunc(s, hiddenRune); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		p.errorf(v.Line, "%s %q has the character %q, a control character or a bidirectional control; remove it", what, s, r)
		return ""
	}
	return s
}

// hiddenRune says whether r is a control character or a bidirectional control (U+202A-E,
// U+2066-9, U+200E-F, U+061C), or a line or paragraph separator.
func hiddenRune(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}

func (p *parser) positive(v *yaml.Node, what string) int {
	n, err := strconv.Atoi(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil || n < 1 {
		p.errorf(v.Line, "%s must be a positive integer, not %q", what, v.Value)
		return 0
	}
	return n
}

func (p *parser) retries(v *yaml.Node) int {
	n, err := strconv.Atoi(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil || n < 0 || n > 100 {
		p.errorf(v.Line, "retries must be a whole number from 0 to 100, not %q", v.Value)
		return 0
	}
	return n
}

func (p *parser) priority(v *yaml.Node) string {
	switch v.Value {
	case High, Medium, Low:
		return v.Value
	}
	p.errorf(v.Line, "priority %q is not one of high, medium, low", v.Value)
	return Medium
}

// durationRE is the manifest schema's form of a timeout: seconds, or 1h30m, 90s, 30m.
var durationRE = regexp.MustCompile(`^(?:[0-9]+|(?:[0-9]+h)?(?:[0-9]+m)?(?:[0-9]+s)?)$`)

// ParseTimeout reads a timeout: a number of seconds, or a duration such as 90s, 30m, 4h, 1h30m.
func ParseTimeout(s string) (time.Duration, error) {
	if s == "" || !durationRE.MatchString(s) {
		return 0, fmt.Errorf("timeout %q is neither seconds nor a duration such as 90s, 30m, 1h30m", s)
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 {
			return 0, fmt.Errorf("timeout %q must be at least 1 second", s)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("timeout %q is not a positive duration", s)
	}
	return d, nil
}

func (p *parser) timeout(v *yaml.Node) time.Duration {
	d, err := ParseTimeout(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil {
		p.errorf(v.Line, "timeout %q is neither seconds nor a duration such as 90s, 30m, 1h30m", v.Value)
	}
	return d
}

func (p *parser) defaults(v *yaml.Node, d *Defaults) {
	if v.Kind != yaml.MappingNode {
		p.errorf(v.Line, "defaults must be a mapping {%s}", strings.Join(defaultKeys, ", "))
		return
	}
	p.uniqueKeys(v)
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		switch k.Value {
		case "agent":
			d.Agent = p.line(val, "defaults.agent")
		case "model":
			d.Model = p.line(val, "defaults.model")
		case "timeout":
			d.Timeout = p.timeout(val)
		case "retries":
			d.Retries = p.retries(val)
		default:
			p.errorf(k.Line, "unknown key %q in defaults; they are %s", k.Value, strings.Join(defaultKeys, ", "))
		}
	}
}

// taskKind is how CheckName names a task id: ids become bead names (<execution>-<task>),
// file names and git refs, so they follow the toolkit's one name rule, without dots.
const taskKind = statedir.Kind("task id")

// maxSlug is the longest Slug: a manifest's name as execution ids carry it.
const maxSlug = 41

// MaxTaskID is the longest task id whose bead, <execution>-<task>, is still a name the state
// directory takes (statedir.MaxName) with the longest execution id (YYYY-MM-DD-<slug>-xxxx):
// a longer one would pass here and fail at its first attempt, after the run had started.
const MaxTaskID = statedir.MaxName - len("2006-01-02-") - maxSlug - len("-abcd") - len("-")

func (p *parser) task(item *yaml.Node, d Defaults, priority string) (Task, bool) {
	if item.Kind != yaml.MappingNode {
		p.errorf(item.Line, "a task is a mapping {id, prompt or prompt_file, branch, ...}")
		return Task{}, false
	}
	t := Task{Line: item.Line, Priority: priority, Agent: d.Agent, Model: d.Model, Timeout: d.Timeout, Retries: d.Retries}
	var prompt, promptFile *yaml.Node
	p.uniqueKeys(item)
	seen := map[string]bool{}
	for i := 0; i+1 < len(item.Content); i += 2 {
		k, v := item.Content[i], item.Content[i+1]
		seen[k.Value] = true
		switch k.Value {
		case "id":
			t.ID = p.taskID(v)
		case "prompt":
			prompt = v
		case "prompt_file":
			promptFile = v
		case "branch":
			t.Branch = p.line(v, "branch")
			p.branch(v, t.Branch, "branch")
		case "priority":
			t.Priority = p.priority(v)
		case "depends_on":
			t.DependsOn = append(t.DependsOn, p.dependsOn(v)...)
		case "agent":
			t.Agent = p.line(v, "agent")
		case "model":
			t.Model = p.line(v, "model")
		case "timeout":
			t.Timeout = p.timeout(v)
		case "retries":
			t.Retries = p.retries(v)
		case "agent_hint":
			t.AgentHint = p.line(v, "agent_hint")
		case "description":
		default:
			p.errorf(k.Line, "unknown key %q in a task; a task has %s", k.Value, strings.Join(taskKeys, ", "))
		}
	}
	name := "a task"
	if t.ID != "" {
		name = fmt.Sprintf("task %q", t.ID)
	}
	if !seen["id"] {
		p.errorf(item.Line, "%s has no id", name)
	}
	if !seen["branch"] {
		p.errorf(item.Line, "%s has no branch", name)
	}
	switch {
	case prompt != nil && promptFile != nil:
		p.errorf(promptFile.Line, "%s has both prompt and prompt_file; keep one", name)
	case prompt != nil:
		t.Prompt = p.str(prompt, "prompt")
	case promptFile != nil:
		t.Prompt = p.promptFile(promptFile)
	default:
		p.errorf(item.Line, "%s has no prompt (or prompt_file)", name)
	}
	return t, true
}

// taskID reads a task's id: a name by statedir's rule, short enough for its bead's name.
func (p *parser) taskID(v *yaml.Node) string {
	id := p.line(v, "id")
	if id == "" {
		return id
	}
	if err := statedir.CheckName(taskKind, id); err != nil {
		p.errorf(v.Line, "%v", err)
	} else if len(id) > MaxTaskID {
		p.errorf(v.Line, "task id %q is %d characters long; at most %d are allowed (the bead <execution>-<task> must stay a name of at most %d)", id, len(id), MaxTaskID, statedir.MaxName)
	}
	return id
}

// dependsOn reads a task's depends_on: a list of task ids, or null for none.
func (p *parser) dependsOn(v *yaml.Node) []string {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v.Line, "depends_on must be a list of task ids, like [a, b]")
		return nil
	}
	var deps []string
	for _, dep := range v.Content {
		if s := p.line(dep, "a dependency"); s != "" {
			deps = append(deps, s)
		}
	}
	return deps
}

// promptFile reads the prompt of a task's prompt_file, v; "" when it cannot (and says why).
func (p *parser) promptFile(v *yaml.Node) string {
	file := p.line(v, "prompt_file")
	if file == "" {
		return ""
	}
	if p.read == nil {
		p.errorf(v.Line, "prompt_file %q cannot be read here; write the prompt inline", file)
		return ""
	}
	b, err := p.read(file)
	switch {
	case err != nil:
		p.errorf(v.Line, "prompt_file %q: %v", file, oneLine(err))
	case strings.TrimSpace(string(b)) == "":
		p.errorf(v.Line, "prompt_file %q is empty", file)
	default:
		return string(b)
	}
	return ""
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// branch checks a branch name by CheckBranch, without git.
func (p *parser) branch(v *yaml.Node, b, what string) {
	if b == "" {
		return
	}
	if err := CheckBranch(b); err != nil {
		p.errorf(v.Line, "%s %q: %v", what, b, err)
	}
}

// CheckBranch returns an error unless b is a branch name the manifest takes. The rule, one for
// the base branch and the tasks' branches (docs/swarm-run.md):
//   - ASCII letters, digits, '.', '_', '-' and '/' only: no space, control character,
//     bidirectional override or look-alike letter that would print as another name;
//   - what git check-ref-format --branch refuses of these (git 2.39): no "..", "//", no leading
//     '-' or '/', no final '/', '.' or ".lock", no component starting with '.' or ending in
//     ".lock";
//   - no name git reads as something else before it reads it as a branch: one that starts
//     with refs/ (a full ref name: refs/heads/main is the branch main), heads/, tags/ or
//     remotes/ (git looks refs/<name> up first: tags/v1 is the tag v1), or one of capital
//     letters and '_' alone (HEAD, FETCH_HEAD, ORIG_HEAD: files of the repository's own, read
//     first).
//
// Every git command of the toolkit names a task's branch in full (refs/heads/<name>), so a tag
// or another ref of the same name cannot stand in for it there; the rule keeps the names
// unambiguous for the people (and the forge) who use them after.
func CheckBranch(b string) error {
	for _, r := range b {
		if !safeBranchRune(r) {
			return fmt.Errorf("has the character %q; a branch name here is ASCII letters, digits, '.', '_', '-' and '/'", r)
		}
	}
	if first, _, found := strings.Cut(b, "/"); found {
		switch first {
		case "refs":
			return errors.New("starts with refs/: git reads it as a full ref name (refs/heads/x is the branch x); give the branch's name alone")
		case "heads", "tags", "remotes":
			return fmt.Errorf("starts with %s/: git reads it as refs/%s before the branch refs/heads/%s; give the branch another name", first, b, b)
		}
	}
	if strings.Trim(b, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
		return errors.New("is capital letters and '_' alone: git reads such a name as a file of the repository's own (HEAD, FETCH_HEAD, ORIG_HEAD) before a branch; add a lower-case letter, a digit or a '-'")
	}
	switch {
	case strings.HasPrefix(b, "-"), strings.HasPrefix(b, "/"), strings.HasSuffix(b, "/"), strings.HasSuffix(b, "."),
		strings.HasSuffix(b, ".lock"), strings.Contains(b, ".."), strings.Contains(b, "//"):
		return errors.New("is not a valid git branch name")
	}
	for _, c := range strings.Split(b, "/") {
		if strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return errors.New("is not a valid git branch name (a component starts with '.' or ends in .lock)")
		}
	}
	return nil
}

// safeBranchRune says whether r may be part of a branch name (CheckBranch).
func safeBranchRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-' || r == '/'
}

// graph checks what needs every task: unique ids and branches, dependencies that exist, and no
// cycle.
func (p *parser) graph(m *Manifest) {
	ids := map[string]*Task{}
	branches := map[string]*Task{}
	for i := range m.Tasks {
		t := &m.Tasks[i]
		if t.ID != "" {
			if first, ok := ids[t.ID]; ok {
				p.errorf(t.Line, "task id %q is used twice (first at line %d)", t.ID, first.Line)
			} else {
				ids[t.ID] = t
			}
		}
		if t.Branch != "" {
			if first, ok := branches[t.Branch]; ok {
				p.errorf(t.Line, "branch %q of task %q is task %q's too (line %d); each task needs its own branch", t.Branch, t.ID, first.ID, first.Line)
			} else {
				branches[t.Branch] = t
			}
			if t.Branch == m.BaseBranch {
				p.errorf(t.Line, "branch %q of task %q is the base branch; give the task a branch of its own", t.Branch, t.ID)
			}
		}
	}
	bad := false
	for i := range m.Tasks {
		t := &m.Tasks[i]
		seen := map[string]bool{}
		for _, d := range t.DependsOn {
			switch {
			case d == t.ID:
				p.errorf(t.Line, "task %q depends on itself", t.ID)
				bad = true
			case ids[d] == nil:
				p.errorf(t.Line, "task %q depends on %q, which is no task of the manifest", t.ID, d)
				bad = true
			case seen[d]:
				p.errorf(t.Line, "task %q names %q twice in depends_on", t.ID, d)
			}
			seen[d] = true
		}
	}
	if bad || len(p.errs) > 0 {
		return // a cycle is looked for among tasks that are otherwise right
	}
	if cycle := findCycle(m); cycle != nil {
		p.errorf(ids[cycle[0]].Line, "dependency cycle: %s", strings.Join(cycle, " -> "))
	}
}

// findCycle returns a cycle of dependencies as the path around it (its first id again at the
// end), or nil: the same on every run (taskgraph.Graph.Cycle walks from the tasks in manifest
// order).
func findCycle(m *Manifest) []string { return m.Graph().Cycle() }

// Slug is the manifest's name as the execution id carries it: lower-case letters and digits,
// other runs of characters as one '-', at most 40 characters ("Sprint 47" → "sprint-47").
func (m *Manifest) Slug() string { return slug(m.Name) }

func slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
		if b.Len() >= maxSlug-1 { // a dash and a rune may have made it maxSlug
			break
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// Order returns the task ids in a topological order: each after its dependencies, ties broken
// by priority, then manifest order. The manifest must be checked (no cycle): a task on a cycle,
// or after one, is left out. O(n log n + e) (taskgraph.Graph.Order): picking the best ready
// task by scanning every task made 20,000 tasks take 20 s.
func (m *Manifest) Order() []string {
	order := m.Graph().Order()
	out := make([]string, len(order))
	for k, i := range order {
		out[k] = m.Tasks[i].ID
	}
	return out
}

// Graph is the manifest's tasks as a taskgraph.Graph, in manifest order, ranked by priority.
func (m *Manifest) Graph() *taskgraph.Graph {
	nodes := make([]taskgraph.Node, len(m.Tasks))
	for i, t := range m.Tasks {
		nodes[i] = taskgraph.Node{ID: t.ID, Deps: t.DependsOn, Rank: Rank(t.Priority)}
	}
	return taskgraph.New(nodes)
}
