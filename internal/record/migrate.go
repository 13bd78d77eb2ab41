package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Field orders of the full records, as dispatch writes them. Migrated records are written in
// this order, with any fields the schema does not know after them, sorted.
var (
	runFields = []string{"schema_version", "bead", "agent", "model", "repo", "prompt", "prompt_hash",
		"started_at", "finished_at", "duration_seconds", "status", "attempt", "max_retries",
		"session_name", "result_file", "exit_code", "output_summary", "failure_reason",
		"template_name", "prompt_full", "verification"}
	resultFields = []string{"schema_version", "bead", "agent", "status", "reason", "started_at",
		"finished_at", "duration_seconds", "attempt", "max_retries", "will_retry", "exit_code",
		"session_name", "output_summary", "verification"}
)

// LegacyReason is the reason a migrated result gets when its legacy record had none and its run
// names no failure reason: the outcome is known, its cause is not.
const LegacyReason = "legacy-record"

// Change is one field a migration set.
type Change struct {
	Field string `json:"field"`
	// From is the JSON the field held before ("" when it was absent); To is what it holds now.
	From string `json:"from,omitempty"`
	To   string `json:"to"`
}

// Migration is what migrating one record did.
type Migration struct {
	// Changes lists the fields set, in the record's field order; empty when nothing was missing.
	Changes []Change
	// Output is the migrated document, or nil when there were no changes.
	Output []byte
}

// object is a decoded JSON object whose values stay raw, so numbers and strings the migration
// does not touch are written back byte for byte.
type object map[string]json.RawMessage

func decodeObject(doc []byte) (object, error) {
	doc = fsx.StripBOM(doc)
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	var o object
	if err := json.Unmarshal(doc, &o); err != nil {
		return nil, err
	}
	return o, nil
}

// str returns the string at key, if the key holds a string (null is no string: json.Unmarshal
// would leave "" and report no error).
func (o object) str(key string) (string, bool) {
	var s string
	if raw, ok := o[key]; ok && !o.isNull(key) && json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	return "", false
}

// integer returns the integer at key, if the key holds one, read as the records' reader reads
// it (Integer: 2.0 and "2" too). A null is unknown, never 0: read as 0, a '$START' record's
// null duration_seconds once made its start its finish.
func (o object) integer(key string) (int64, bool) {
	n, ok, err := Integer(o[key])
	return n, ok && err == nil
}

func (o object) has(key string) bool { _, ok := o[key]; return ok }

// isNull reports whether key is absent or null.
func (o object) isNull(key string) bool {
	raw, ok := o[key]
	return !ok || string(bytes.TrimSpace(raw)) == "null"
}

// migration collects the changes made to one object.
type migration struct {
	o       object
	changes []Change
}

// set records and applies a change of key to v.
func (m *migration) set(key string, v any) {
	raw, _ := json.Marshal(v)
	from := ""
	if old, ok := m.o[key]; ok {
		from = string(old)
	}
	m.o[key] = raw
	for i := range m.changes {
		if m.changes[i].Field == key { // set twice (copied, then resolved): one change
			m.changes[i].To = string(raw)
			return
		}
	}
	m.changes = append(m.changes, Change{Field: key, From: from, To: string(raw)})
}

// setIfMissing sets key to v when the key is absent.
func (m *migration) setIfMissing(key string, v any) {
	if !m.o.has(key) {
		m.set(key, v)
	}
}

// copyIfMissing sets key from other's key (raw) when the key is absent and other has it.
func (m *migration) copyIfMissing(key string, other object, otherKey string) {
	if !m.o.has(key) && other != nil && other.has(otherKey) {
		var v any
		if json.Unmarshal(other[otherKey], &v) == nil {
			m.set(key, json.RawMessage(other[otherKey]))
		}
	}
}

// resolveStart replaces a '$START' started_at with finished_at minus duration_seconds.
func (m *migration) resolveStart() {
	start, _ := m.o.str("started_at")
	if !IsPlaceholder(start) {
		return
	}
	fin, ok1 := m.o.str("finished_at")
	dur, ok2 := m.o.integer("duration_seconds")
	end, ok3 := ParseTime(fin)
	if ok1 && ok2 && ok3 && dur >= 0 {
		m.set("started_at", FormatTime(end.Add(-time.Duration(dur)*time.Second)))
	}
}

// fillDuration sets a missing (or null) duration_seconds from started_at and finished_at.
func (m *migration) fillDuration() {
	if !m.o.isNull("duration_seconds") {
		return
	}
	start, _ := m.o.str("started_at")
	fin, _ := m.o.str("finished_at")
	if d, ok := Seconds(start, fin); ok {
		m.set("duration_seconds", d)
	} else if !m.o.has("duration_seconds") {
		m.set("duration_seconds", nil)
	}
}

// integerKeys are the integer fields of the records (a run's and a result's alike).
var integerKeys = []string{"schema_version", "duration_seconds", "attempt", "max_retries", "exit_code"}

// numbers writes an integer field an older tool wrote as a string ("attempt": "1", a quoted
// shell variable) as the number it spells, as every reader of the records reads it (Integer)
// and as dispatch.sh's jq arithmetic took it. An empty string is unknown: null where the schema
// allows null (duration_seconds, exit_code), left as it is otherwise. A string that spells no
// whole number ("two") is left for a person, reported by the schema.
func (m *migration) numbers() {
	for _, key := range integerKeys {
		raw := bytes.TrimSpace(m.o[key])
		if len(raw) == 0 || raw[0] != '"' {
			continue
		}
		n, known, err := Integer(raw)
		switch {
		case err != nil:
		case known:
			m.set(key, n)
		case key == "duration_seconds" || key == "exit_code":
			m.set(key, nil)
		}
	}
}

func (m *migration) result(order []string) (Migration, error) {
	m.numbers()
	if len(m.changes) == 0 {
		return Migration{}, nil
	}
	out, err := m.o.marshal(order)
	if err != nil {
		return Migration{}, err
	}
	sort.SliceStable(m.changes, func(i, j int) bool {
		return indexOf(order, m.changes[i].Field) < indexOf(order, m.changes[j].Field)
	})
	return Migration{Changes: m.changes, Output: out}, nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return len(list)
}

// marshal writes the object as dispatch writes a record (Marshal): one compact line and a
// newline, jq's escapes, the known fields in order, then the others sorted. The original's --fix
// wrote it indented (jq without -c), so that line-based consumers (grep '"status":"done"')
// missed every migrated record.
func (o object) marshal(order []string) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	n := 0
	emit := func(k string) {
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		key, _ := json.Marshal(k)
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(o[k])
	}
	known := map[string]bool{}
	for _, k := range order {
		known[k] = true
		if o.has(k) {
			emit(k)
		}
	}
	var rest []string
	for k := range o {
		if !known[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		emit(k)
	}
	buf.WriteByte('}')
	var out bytes.Buffer
	if err := json.Compact(&out, buf.Bytes()); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return jqEscapes(out.Bytes()), nil
}

// Defaults are what a migration uses where neither record of the bead says.
type Defaults struct {
	// Bead is the bead id to give a record that has none: its file name without ".json".
	Bead string
	// MaxRetries is the max_retries to give (dispatch's DISPATCH_MAX_RETRIES, default 2).
	MaxRetries int
	// StateDir is the state directory the record belongs to: a missing result_file is the
	// absolute path of the bead's result in it, as dispatch writes it. Empty: the seed's
	// relative "state/results/<bead>.json".
	StateDir string
}

// resultFile is the result_file a migrated run gets.
func (def Defaults) resultFile(bead string) string {
	if def.StateDir == "" {
		return statedir.Dir{Root: "state"}.Result(bead)
	}
	return ResultFile(def.StateDir, bead)
}

// fillBead sets a missing bead from the run's partner record or, failing that, the file name.
func (m *migration) fillBead(partner object, def Defaults) string {
	m.copyIfMissing("bead", partner, "bead")
	if !m.o.has("bead") && CheckBead(def.Bead) == nil {
		m.set("bead", def.Bead)
	}
	bead, _ := m.o.str("bead")
	return bead
}

// PromptHash is the prompt_hash of a prompt: the hex sha256 of the full prompt.
func PromptHash(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(sum[:])
}

// Truncate returns the first n characters (runes, not bytes) of s: the run record's prompt.
func Truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// MigrateRun fills what a legacy or incomplete run record lacks to be a full schema-v1 record:
// schema_version, prompt_full, prompt_hash, session_name, result_file, max_retries, the nullable
// fields, and status, finished_at and exit_code from the bead's result (result may be nil). A
// '$START' started_at is resolved from finished_at and duration_seconds when both are known.
// Fields present are never changed otherwise; what cannot be derived is left for the caller to
// report from the schema's problems.
func MigrateRun(doc, result []byte, def Defaults) (Migration, error) {
	o, err := decodeObject(doc)
	if err != nil {
		return Migration{}, err
	}
	res, _ := decodeObject(result) // no usable result: migrate from the run alone
	m := &migration{o: o}
	bead := m.fillBead(res, def)

	m.setIfMissing("schema_version", SchemaVersion)
	m.copyIfMissing("agent", res, "agent")
	m.copyIfMissing("attempt", res, "attempt")
	if !o.has("prompt_full") {
		if p, ok := o.str("prompt"); ok {
			m.set("prompt_full", p)
		}
	}
	if full, ok := o.str("prompt_full"); ok {
		if !o.has("prompt") {
			m.set("prompt", Truncate(full, 200))
		}
		if !o.has("prompt_hash") {
			m.set("prompt_hash", PromptHash(full))
		}
	}
	if bead != "" {
		m.setIfMissing("session_name", SessionName(bead))
		m.setIfMissing("result_file", def.resultFile(bead))
	}
	m.setIfMissing("max_retries", def.MaxRetries)

	if res != nil {
		m.copyIfMissing("status", res, "status")
		m.copyIfMissing("finished_at", res, "finished_at")
		m.copyIfMissing("exit_code", res, "exit_code")
		if !o.has("started_at") {
			m.copyIfMissing("started_at", res, "started_at")
		}
	}
	m.setIfMissing("status", StatusRunning)
	m.setIfMissing("finished_at", nil)
	m.setIfMissing("exit_code", nil)
	if !o.has("duration_seconds") && res != nil && !res.isNull("duration_seconds") {
		if start, _ := o.str("started_at"); IsPlaceholder(start) {
			m.copyIfMissing("duration_seconds", res, "duration_seconds")
		}
	}
	m.resolveStart()
	m.fillDuration()
	if !o.has("failure_reason") {
		status, _ := o.str("status")
		reason, ok := res.str("reason")
		if (status == StatusFailed || status == StatusTimeout) && ok && reason != "" {
			m.set("failure_reason", reason)
		} else {
			m.set("failure_reason", nil)
		}
	}
	m.setIfMissing("output_summary", nil)
	m.setIfMissing("template_name", nil)
	return m.result(runFields)
}

// MigrateResult fills what a legacy result record lacks to be a full schema-v1 record, taking
// agent, started_at, attempt and max_retries from the bead's run record (run may be nil).
// will_retry follows dispatch's rule: not done, not running, and attempts left.
func MigrateResult(doc, run []byte, def Defaults) (Migration, error) {
	o, err := decodeObject(doc)
	if err != nil {
		return Migration{}, err
	}
	rn, _ := decodeObject(run)
	m := &migration{o: o}
	bead := m.fillBead(rn, def)

	m.setIfMissing("schema_version", SchemaVersion)
	m.copyIfMissing("agent", rn, "agent")
	m.copyIfMissing("attempt", rn, "attempt")
	m.copyIfMissing("max_retries", rn, "max_retries")
	m.setIfMissing("max_retries", def.MaxRetries)
	if !o.has("reason") {
		if r, ok := rn.str("failure_reason"); ok && r != "" {
			m.set("reason", r)
		} else {
			m.set("reason", LegacyReason)
		}
	}
	if !o.has("started_at") {
		m.copyIfMissing("started_at", rn, "started_at")
	}
	m.setIfMissing("finished_at", nil)
	m.resolveStart()
	if start, _ := o.str("started_at"); IsPlaceholder(start) && rn != nil {
		// The run may know the duration the result lacks.
		if d, ok := rn.integer("duration_seconds"); ok && !o.has("duration_seconds") {
			m.set("duration_seconds", d)
			m.resolveStart()
		}
	}
	m.fillDuration()
	if !o.has("will_retry") {
		status, _ := o.str("status")
		attempt, ok1 := o.integer("attempt")
		max, ok2 := o.integer("max_retries")
		m.set("will_retry", status != StatusDone && status != StatusRunning && ok1 && ok2 && attempt < max)
	}
	m.copyIfMissing("exit_code", rn, "exit_code")
	m.setIfMissing("exit_code", nil)
	if bead != "" {
		m.setIfMissing("session_name", SessionName(bead))
	}
	m.setIfMissing("output_summary", nil)
	return m.result(resultFields)
}
