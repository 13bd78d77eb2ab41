package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// filterDoc is the report's "filter" object: since as the original named it (now filled in), and
// the other filters only when given, so the document keeps the original's shape.
type filterDoc struct {
	Since    *string  `json:"since"`
	Until    string   `json:"until,omitempty"`
	Agent    []string `json:"agent,omitempty"`
	Model    []string `json:"model,omitempty"`
	Template []string `json:"template,omitempty"`
}

// WriteJSON writes analyze-runs.sh --json's document: generated_at, filter, statistics,
// recommendations and raw_data (the merged records in bead order), indented as jq printed it.
// raw_data is streamed from the report's spool, so its size does not matter.
func WriteJSON(w io.Writer, r *Report) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	f := filterDoc{Until: r.Filter.Until, Agent: r.Filter.Agents, Model: r.Filter.Models, Template: r.Filter.Templates}
	if r.Filter.Since != "" {
		f.Since = &r.Filter.Since
	}
	bw.WriteString("{\n  \"generated_at\": ")
	bw.Write(indented(r.GeneratedAt.Format("2006-01-02T15:04:05Z")))
	bw.WriteString(",\n  \"filter\": ")
	bw.Write(indented(f))
	bw.WriteString(",\n  \"statistics\": ")
	bw.Write(indented(r.Stats))
	bw.WriteString(",\n  \"recommendations\": ")
	bw.Write(indented(r.Recommendations))
	bw.WriteString(",\n  \"raw_data\": [")
	n := 0
	if r.Raw != nil {
		err := r.Raw.Each(func(elem []byte) error {
			if n > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString("\n    ")
			n++
			return writeIndented(bw, elem, "    ", "  ")
		})
		if err != nil {
			return err
		}
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}

// indented marshals v for a place one level into the document, without HTML escaping.
func indented(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	if err := enc.Encode(v); err != nil {
		// Every value here is a plain struct, slice or string: this cannot fail.
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
