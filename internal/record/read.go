package record

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentfleet/fleet/internal/fsx"
)

// DecodeRun decodes a run record of either form. Fields a legacy record lacks are left zero.
func DecodeRun(b []byte) (*Run, error) {
	var r Run
	if err := decode(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DecodeResult decodes a result record of either form. Fields a legacy record lacks are left zero.
func DecodeResult(b []byte) (*Result, error) {
	var r Result
	if err := decode(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ReadRun reads the run record at path.
func ReadRun(path string) (*Run, error) {
	b, err := fsx.ReadFileLimit(path, MaxSize)
	if err != nil {
		return nil, fmt.Errorf("reading run record: %w", err)
	}
	r, err := DecodeRun(b)
	if err != nil {
		return nil, fmt.Errorf("reading run record %s: %w", path, err)
	}
	return r, nil
}

// ReadResult reads the result record at path.
func ReadResult(path string) (*Result, error) {
	b, err := fsx.ReadFileLimit(path, MaxSize)
	if err != nil {
		return nil, fmt.Errorf("reading result record: %w", err)
	}
	r, err := DecodeResult(b)
	if err != nil {
		return nil, fmt.Errorf("reading result record %s: %w", path, err)
	}
	return r, nil
}

// decode reads one JSON object into v, after a UTF-8 BOM if there is one.
func decode(b []byte, v any) error {
	b = fsx.StripBOM(b)
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return fmt.Errorf("the file is empty")
	}
	if trimmed[0] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	return nil
}
