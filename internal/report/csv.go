package report

import (
	"encoding/csv"
	"io"
	"strconv"
)

// csvHeader names the columns of the CSV report: one row per merged record counted.
var csvHeader = []string{"bead", "attempt", "agent", "model", "template", "task_type", "status",
	"result_status", "reason", "started_at", "finished_at", "duration_seconds", "verification"}

// CSVWriter writes the merged records as CSV (RFC 4180), a row as each arrives: it needs no
// totals, so it holds nothing. Text from the records is printable and never starts a formula
// (csvCell). status is the outcome the report counts the record under
// (done, failed, timeout, running); result_status is the result's own status, empty without one.
type CSVWriter struct {
	w      *csv.Writer
	header bool
	row    []string
}

// NewCSVWriter returns a CSVWriter on w.
func NewCSVWriter(w io.Writer) *CSVWriter {
	return &CSVWriter{w: csv.NewWriter(w), row: make([]string, len(csvHeader))}
}

// Write writes b's row (after the header, the first time).
func (c *CSVWriter) Write(b *Bead) {
	c.writeHeader()
	duration := ""
	if b.HasSeconds {
		duration = strconv.FormatInt(b.Seconds, 10)
	}
	attempt := ""
	if b.Attempt > 0 {
		attempt = strconv.Itoa(b.Attempt)
	}
	r := c.row
	r[0], r[1], r[2], r[3], r[4], r[5] = csvCell(b.ID), attempt, csvCell(b.Agent), csvCell(b.Model), csvCell(b.Template), b.Task
	r[6], r[7], r[8] = csvCell(b.Outcome()), csvCell(b.Status), csvCell(b.Reason)
	r[9], r[10], r[11], r[12] = csvCell(b.StartedAt), csvCell(b.FinishedAt), duration, csvCell(b.Verified)
	c.w.Write(r)
}

func (c *CSVWriter) writeHeader() {
	if !c.header {
		c.w.Write(csvHeader)
		c.header = true
	}
}

// Flush writes what is buffered (the header alone when there were no records) and returns the
// first error met.
func (c *CSVWriter) Flush() error {
	c.writeHeader()
	c.w.Flush()
	return c.w.Error()
}
