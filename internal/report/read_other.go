//go:build !unix

package report

import (
	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
)

// readInto reads a record file, bounded as every record read is.
func readInto(path string, _ []byte) ([]byte, error) {
	return fsx.ReadFileLimit(path, record.MaxSize)
}
