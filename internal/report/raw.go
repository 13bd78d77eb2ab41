package report

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/jsonscan"
	"github.com/agentfleet/fleet/internal/record"
)

// rawData builds a bead's element of raw_data: the run record as written, followed by the
// fields the original appended (result_status, result_finished_at, result_reason, null when the
// result lacks them), and by verification when a verify file was merged. It is returned
// compact; WriteJSON indents it as it writes it (writeIndented).
func rawData(runDoc []byte, res *record.Result, verify json.RawMessage) ([]byte, error) {
	// DecodeRun read runDoc, so it is well-formed JSON and the quick compaction is exact.
	doc := jsonscan.AppendCompact(make([]byte, 0, len(runDoc)), bytes.TrimSpace(fsx.StripBOM(runDoc)))
	status, finished, reason := []byte("null"), []byte("null"), []byte("null")
	if res != nil {
		if res.Status != "" {
			status, _ = json.Marshal(res.Status)
		}
		if res.FinishedAt != nil {
			finished, _ = json.Marshal(*res.FinishedAt)
		}
		if res.Reason != "" {
			reason, _ = json.Marshal(res.Reason)
		}
	}
	fields := []member{{"result_status", status}, {"result_finished_at", finished}, {"result_reason", reason}}
	if verify != nil {
		fields = append(fields, member{"verification", verify})
	}
	var merged []byte
	if hasKey(doc, `"result_status"`, `"result_finished_at"`, `"result_reason"`) || (verify != nil && hasKey(doc, `"verification"`)) || bytes.Contains(doc, []byte(`\u`)) {
		// The run may already have a field of one of these names (its key may be written with
		// an escape, "result\u005fstatus"): replace its value where it stands, as jq's + does. Rare
		// enough to take the slow way, which walks the members and holds no map of them (a
		// record of a million keys made one of 200 MB).
		merged = replaceMembers(doc, fields)
	} else {
		merged = make([]byte, 0, len(doc)+96+len(verify))
		merged = append(merged, doc[:len(doc)-1]...) // the object without its closing brace
		for i, f := range fields {
			if i > 0 || len(doc) > 2 {
				merged = append(merged, ',')
			}
			merged = appendMember(merged, f)
		}
		merged = append(merged, '}')
	}
	return merged, nil
}

// writeIndented writes the compact JSON value doc indented as json.Indent(dst, doc, prefix,
// indent) would (and jq printed raw_data), but as it goes: indented, a record of arrays nested
// ten thousand deep is 200 MB, which is the report's output to write, not memory to hold.
func writeIndented(w *bufio.Writer, doc []byte, prefix, indent string) error {
	depth := 0
	newline := func() {
		w.WriteByte('\n')
		w.WriteString(prefix)
		for i := 0; i < depth; i++ {
			w.WriteString(indent)
		}
	}
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; c {
		case '"':
			end := jsonscan.String(doc, i)
			w.Write(doc[i:end])
			i = end - 1
		case '{', '[':
			w.WriteByte(c)
			if i+1 < len(doc) && (doc[i+1] == '}' || doc[i+1] == ']') {
				w.WriteByte(doc[i+1]) // {} and [] stay as they are
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			w.WriteByte(c)
		case ',':
			w.WriteByte(c)
			newline()
		case ':':
			w.WriteString(": ")
		default:
			w.WriteByte(c)
		}
	}
	return nil // a write error sticks to w, for its Flush
}

// member is one field of an object: its name and its value as JSON.
type member struct {
	name  string
	value []byte
}

func appendMember(b []byte, m member) []byte {
	b = append(b, '"')
	b = append(b, m.name...) // the names here need no escaping
	b = append(b, '"', ':')
	return append(b, m.value...)
}

// replaceMembers returns the compact object doc with the value of each of fields set: in the
// place of the first member of that name (later ones dropped), or at the end when it has none.
func replaceMembers(doc []byte, fields []member) []byte {
	out := make([]byte, 0, len(doc)+96)
	out = append(out, '{')
	done := make([]bool, len(fields))
	n := 0
	eachMember(doc, func(key, raw []byte) {
		name := string(key[1 : len(key)-1])
		if bytes.IndexByte(key, '\\') >= 0 {
			json.Unmarshal(key, &name)
		}
		for i, f := range fields {
			if f.name == name {
				if done[i] {
					return // a duplicate: the value is set once, where the name came first
				}
				done[i] = true
				raw = appendMember(nil, f)
			}
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, raw...)
		n++
	})
	for i, f := range fields {
		if !done[i] {
			if n > 0 {
				out = append(out, ',')
			}
			out = appendMember(out, f)
			n++
		}
	}
	return append(out, '}')
}

// eachMember calls fn with the key (quoted, as written) and the whole member (key, colon and
// value) of each member of the compact JSON object doc.
func eachMember(doc []byte, fn func(key, raw []byte)) {
	i := 1
	for i < len(doc) && doc[i] != '}' {
		start := i
		keyEnd := jsonscan.String(doc, i)
		end := jsonscan.Value(doc, keyEnd+1) // after the colon
		fn(doc[start:keyEnd], doc[start:end])
		i = end
		if i < len(doc) && doc[i] == ',' {
			i++
		}
	}
}

// hasKey reports whether doc may have one of the quoted keys: a cheap test that sends the rare
// record with such a field (or such a string anywhere) down the slow, exact path.
func hasKey(doc []byte, keys ...string) bool {
	for _, k := range keys {
		if bytes.Contains(doc, []byte(k)) {
			return true
		}
	}
	return false
}

// spoolMemory is how much of raw_data is kept in memory before the spool moves to a temporary
// file: enough for several thousand records, far below what a million would need.
var spoolMemory = 8 << 20

// Spool keeps the raw_data elements between the scan and the end of the report: the statistics
// come first in the JSON document but are known only after the last record, and a million
// records' raw data (a gigabyte or more) must not be held in memory. Elements stay in memory up
// to spoolMemory, then go to an unlinked temporary file, so nothing is left behind on a crash.
type Spool struct {
	mem  bytes.Buffer
	file *os.File
	w    *bufio.Writer
	n    int
	err  error
}

// Len is the number of elements added.
func (s *Spool) Len() int { return s.n }

// Add appends one element. The first error sticks and is returned by Each.
func (s *Spool) Add(elem []byte) {
	if s.err != nil {
		return
	}
	s.n++
	var hdr [binary.MaxVarintLen64]byte
	h := hdr[:binary.PutUvarint(hdr[:], uint64(len(elem)))]
	if s.file == nil && s.mem.Len()+len(elem) > spoolMemory {
		s.spill()
	}
	if s.file == nil {
		s.mem.Write(h)
		s.mem.Write(elem)
		return
	}
	if _, err := s.w.Write(h); err != nil {
		s.err = err
		return
	}
	if _, err := s.w.Write(elem); err != nil {
		s.err = err
	}
}

// spill moves the spool to a temporary file.
func (s *Spool) spill() {
	f, err := os.CreateTemp("", "analyze-runs-*.spool")
	if err != nil {
		s.err = fmt.Errorf("spooling raw_data: %w", err)
		return
	}
	// Unlinked at once: the open file keeps the data, and nothing outlives the process.
	os.Remove(f.Name())
	s.file = f
	s.w = bufio.NewWriterSize(f, 1<<20)
	if _, err := s.mem.WriteTo(s.w); err != nil {
		s.err = fmt.Errorf("spooling raw_data: %w", err)
	}
	s.mem = bytes.Buffer{}
}

// Each calls fn with every element in the order added.
func (s *Spool) Each(fn func(elem []byte) error) error {
	if s.err != nil {
		return s.err
	}
	var r *bufio.Reader
	if s.file != nil {
		if err := s.w.Flush(); err != nil {
			return fmt.Errorf("spooling raw_data: %w", err)
		}
		if _, err := s.file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		r = bufio.NewReaderSize(s.file, 1<<20)
	} else {
		r = bufio.NewReader(bytes.NewReader(s.mem.Bytes()))
	}
	var buf []byte
	for {
		n, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading back raw_data: %w", err)
		}
		if uint64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("reading back raw_data: %w", err)
		}
		if err := fn(buf); err != nil {
			return err
		}
	}
}

// Close releases the spool's file.
func (s *Spool) Close() error {
	if s.file != nil {
		return s.file.Close()
	}
	return nil
}
