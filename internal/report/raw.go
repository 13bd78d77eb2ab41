package report

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentfleet/fleet/internal/fsx"
	"io"
	"os"

	"github.com/agentfleet/fleet/internal/record"
)

// rawData builds a bead's element of raw_data: the run record as written, followed by the
// fields the original appended (result_status, result_finished_at, result_reason, null when the
// result lacks them), and by verification when a verify file was merged. It is returned
// indented for its place in the JSON report, so the single goroutine that writes the report
// only copies bytes.
func rawData(runDoc []byte, res *record.Result, verify json.RawMessage) ([]byte, error) {
	var c bytes.Buffer
	if err := json.Compact(&c, fsx.StripBOM(runDoc)); err != nil {
		return nil, err
	}
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
	doc := c.Bytes()
	var merged []byte
	if hasKey(doc, `"result_status"`, `"result_finished_at"`, `"result_reason"`) || (verify != nil && hasKey(doc, `"verification"`)) {
		// The run already has a field of one of these names: replace it, as jq's `+` did. Rare
		// enough to take the slow way (the fields come out sorted, which JSON does not mind).
		var m map[string]json.RawMessage
		if err := json.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		m["result_status"], m["result_finished_at"], m["result_reason"] = status, finished, reason
		if verify != nil {
			m["verification"] = verify
		}
		var err error
		if merged, err = json.Marshal(m); err != nil {
			return nil, err
		}
	} else {
		merged = make([]byte, 0, len(doc)+96+len(verify))
		merged = append(merged, doc[:len(doc)-1]...) // the object without its closing brace
		if len(doc) > 2 {
			merged = append(merged, ',')
		}
		merged = append(merged, `"result_status":`...)
		merged = append(merged, status...)
		merged = append(merged, `,"result_finished_at":`...)
		merged = append(merged, finished...)
		merged = append(merged, `,"result_reason":`...)
		merged = append(merged, reason...)
		if verify != nil {
			merged = append(merged, `,"verification":`...)
			merged = append(merged, verify...)
		}
		merged = append(merged, '}')
	}
	var out bytes.Buffer
	out.Grow(len(merged) * 5 / 4)
	if err := json.Indent(&out, merged, "    ", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
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
