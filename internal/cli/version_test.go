package cli

import (
	"runtime/debug"
	"testing"
)

// TestVersionOf: what --version prints for each way the toolkit is built (issue 29).
func TestVersionOf(t *testing.T) {
	vcs := func(main, revision, modified string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/agentfleet/fleet", Version: main}}
		if revision != "" {
			bi.Settings = []debug.BuildSetting{{Key: "vcs.revision", Value: revision}, {Key: "vcs.modified", Value: modified}}
		}
		return bi
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name, stamped string
		bi            *debug.BuildInfo
		want          string
	}{
		{"make's build, from git describe", "v0.1.0-3-gabc1234", vcs("(devel)", rev, "false"), "v0.1.0-3-gabc1234"},
		{"go install of a release", "", vcs("v0.1.0", "", ""), "v0.1.0"},
		{"go build at the tagged commit", "", vcs("v0.1.0", rev, "false"), "v0.1.0"},
		{"go install of a prerelease", "", vcs("v0.2.0-rc.1", "", ""), "v0.2.0-rc.1"},
		{"go build after the tag", "", vcs("v0.1.1-0.20261207142513-0123456789ab", rev, "false"), "v0.1.0+0123456789ab"},
		{"go build, no tag", "", vcs("v0.0.0-20261207142513-0123456789ab", rev, "false"), "v0.1.0+0123456789ab"},
		{"go build with local changes", "", vcs("v0.1.1-0.20261207142513-0123456789ab+dirty", rev, "true"), "v0.1.0+0123456789ab.dirty"},
		{"go build from a source archive", "", vcs("(devel)", "", ""), "v0.1.0"},
		{"no build info", "", nil, "v0.1.0"},
	} {
		if got := versionOf(c.stamped, c.bi, "v0.1.0"); got != c.want {
			t.Errorf("%s: versionOf = %q, want %q", c.name, got, c.want)
		}
	}
}
