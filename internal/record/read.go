package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/agentfleet/fleet/internal/fsx"
)

// DecodeRun decodes a run record of either form. Fields a legacy record lacks are left zero.
func DecodeRun(b []byte) (*Run, error) {
	if r, ok := fastRun(b); ok {
		return r, nil
	}
	var r Run
	if err := decode(b, r.decode); err != nil {
		return nil, err
	}
	return &r, nil
}

// DecodeResult decodes a result record of either form. Fields a legacy record lacks are left zero.
func DecodeResult(b []byte) (*Result, error) {
	if r, ok := fastResult(b); ok {
		return r, nil
	}
	var r Result
	if err := decode(b, r.decode); err != nil {
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

// decode reads one JSON object with into, after a UTF-8 BOM if there is one. into is the
// record's own decoder, called directly: through json.Unmarshal, the document would be
// checked twice.
func decode(b []byte, into func([]byte) error) error {
	b = fsx.StripBOM(b)
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return fmt.Errorf("the file is empty")
	}
	if trimmed[0] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	if err := into(b); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// "attempt: expected int, got string" rather than encoding/json's words, which
			// name the Go type decoding it (the records' own UnmarshalJSON's inner struct).
			return fmt.Errorf("%s: expected %s, got %s", strings.TrimPrefix(te.Field, "deeper.plain."), jsonType(te.Type.Kind()), te.Value)
		}
		return err
	}
	return nil
}

// jsonType names the JSON type a Go kind is read from.
func jsonType(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "a number"
}
