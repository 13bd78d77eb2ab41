// Package hostile plants in a state directory what anyone who can write it may leave there, for
// the tests and fuzz targets of the tools that read it: records of a million keys, keys of
// megabytes, numbers beyond a double, text a terminal obeys, links (to /dev/zero, to a record,
// to themselves, to nothing), named pipes and directories named like records. Each file is just
// under record.MaxSize, the most a tool reads, so that what it costs to read is what the bounds
// must hold.
//
// It is imported by tests only.
package hostile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/record"
)

// Shape is one kind of entry.
type Shape string

// The shapes. The records among them are run records whose other fields are a legacy record's,
// so that a tool reads them as far as it can.
const (
	// ManyKeys is a record of about 1.7 million short unknown keys, and result_status, which
	// sent analyze-runs --json down a path that held them all in a map: 1.5 GB in
	// validate-state, 400 MB in analyze-runs, each.
	ManyKeys Shape = "many-keys"
	// LongKeys is a record of just under schema.MaxValues unknown keys of 320 bytes: the most
	// validate-state lets gojsonschema decode, each key a problem.
	LongKeys Shape = "long-keys"
	// HugeKey is a record holding one unknown key of nearly 16 MiB.
	HugeKey Shape = "huge-key"
	// HugeString is a valid legacy record whose prompt is nearly 16 MiB.
	HugeString Shape = "huge-string"
	// HugeName is a record whose agent, model, template and reason are each 4 MiB of text a
	// terminal obeys.
	HugeName Shape = "huge-name"
	// Deep is a record nesting arrays 100,000 deep in lint_details.
	Deep Shape = "deep"
	// ManyValues is a record whose lint_details holds about 8 million numbers.
	ManyValues Shape = "many-values"
	// Infinity is a record whose every number is beyond a double (1e400).
	Infinity Shape = "infinity"
	// LinkToZero is a symbolic link to /dev/zero.
	LinkToZero Shape = "link-to-zero"
	// LinkToRecord is a symbolic link to a record elsewhere (the tools do not follow it).
	LinkToRecord Shape = "link-to-record"
	// LinkLoop is a symbolic link to itself.
	LinkLoop Shape = "link-loop"
	// Dangling is a symbolic link to nothing.
	Dangling Shape = "dangling"
	// FIFO is a named pipe, which no one writes.
	FIFO Shape = "fifo"
	// Directory is a directory named like a record.
	Directory Shape = "directory"
)

// Shapes lists every shape.
var Shapes = []Shape{ManyKeys, LongKeys, HugeKey, HugeString, HugeName, Deep, ManyValues, Infinity,
	LinkToZero, LinkToRecord, LinkLoop, Dangling, FIFO, Directory}

// size is what a record shape fills: under the read limit, with room for its fixed fields.
const size = record.MaxSize - 4096

// Plant creates name in dir as shape.
func Plant(dir, name string, shape Shape) error {
	path := filepath.Join(dir, name)
	switch shape {
	case LinkToZero:
		return os.Symlink("/dev/zero", path)
	case LinkToRecord:
		target := filepath.Join(dir, "."+name+".target")
		if err := os.WriteFile(target, []byte(legacy+"}"), 0o600); err != nil {
			return err
		}
		return os.Symlink(target, path)
	case LinkLoop:
		return os.Symlink(name, path)
	case Dangling:
		return os.Symlink(name+".missing", path)
	case FIFO:
		return syscall.Mkfifo(path, 0o600)
	case Directory:
		return os.Mkdir(path, 0o700)
	}
	doc, err := Record(shape)
	if err != nil {
		return err
	}
	return os.WriteFile(path, doc, 0o600)
}

// legacy opens a legacy run record, without its closing brace.
const legacy = `{"bead":"bd-hostile","agent":"claude","model":"sonnet","repo":"/r","started_at":"2026-02-12T10:00:00Z","attempt":1,"prompt":"Fix it"`

// Record returns the document of a record shape.
func Record(shape Shape) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(size + 64)
	switch shape {
	case ManyKeys:
		b.WriteString(legacy + `,"result_status":"x"`)
		for i := 0; b.Len() < size; i++ {
			// "x" first: encoding/json matches keys case-insensitively, and a bare base-36
			// number could be "bead".
			b.WriteString(`,"x`)
			b.WriteString(strconv.FormatInt(int64(i), 36))
			b.WriteString(`":0`)
		}
	case LongKeys:
		pad := strings.Repeat("k", 312)
		b.WriteString(legacy)
		for i := 0; i < 49_900; i++ {
			fmt.Fprintf(&b, `,"%08d%s":0`, i, pad)
		}
	case HugeKey:
		b.WriteString(legacy + `,"`)
		b.WriteString(strings.Repeat("k", size-b.Len()))
		b.WriteString(`":0`)
	case HugeString:
		b.WriteString(`{"bead":"bd-hostile","agent":"claude","model":"sonnet","repo":"/r","started_at":"2026-02-12T10:00:00Z","attempt":1,"prompt":"`)
		b.WriteString(strings.Repeat("x", size-b.Len()))
		b.WriteString(`"`)
	case HugeName:
		text := strings.Repeat("\\u001b]0;pwned\\u0007\\u001b[2J\\n", (size/4-64)/32)
		fmt.Fprintf(&b, `{"bead":"bd-hostile","agent":"%[1]s","model":"%[1]s","template_name":"%[1]s","failure_reason":"%[1]s","repo":"/r","started_at":"2026-02-12T10:00:00Z","attempt":1,"prompt":"Fix it"`, text)
	case Deep:
		b.WriteString(legacy + `,"verification":{"lint_details":`)
		b.WriteString(strings.Repeat("[", 100_000))
		b.WriteString(strings.Repeat("]", 100_000))
		b.WriteString(`}`)
	case ManyValues:
		b.WriteString(legacy + `,"verification":{"lint_details":[0`)
		for b.Len() < size {
			b.WriteString(",1,1,1,1,1,1,1,1")
		}
		b.WriteString(`]}`)
	case Infinity:
		b.WriteString(`{"schema_version":1e400,"bead":"bd-hostile","agent":"claude","model":"m","repo":"/r","started_at":"2026-02-12T10:00:00Z","attempt":1e400,"max_retries":-1e400,"exit_code":1e999,"duration_seconds":1e400,"status":1e400,"prompt":"Fix it"`)
	default:
		return nil, fmt.Errorf("hostile: %q is not a record shape", shape)
	}
	b.WriteString("}")
	return b.Bytes(), nil
}
