// Package fleet is what every binary of the toolkit knows of its version without git or a
// linker flag: the VERSION file at the root of the repository, embedded when it is built. A
// build from a source archive (no .git) or by `go build` in a checkout then says which release
// its source is; make's builds and make release stamp a more precise one (internal/cli).
package fleet

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var versionFile string

// Version is the VERSION file's version as the release tags name it: "v0.1.0" for "0.1.0".
func Version() string {
	return "v" + strings.TrimSpace(versionFile)
}
