package swarmrun

import "testing"

// TestWithoutSecret: the state's repo never carries a password or an https token.
func TestWithoutSecret(t *testing.T) {
	tests := map[string]string{
		"https://x-access-token:s3cr3t@github.com/org/repo.git": "https://github.com/org/repo.git",
		"https://ghp_token@github.com/org/repo.git":             "https://github.com/org/repo.git",
		"ssh://git:pw@host:22/org/repo.git":                     "ssh://git@host:22/org/repo.git",
		"ssh://git@host/org/repo.git":                           "ssh://git@host/org/repo.git",
		"git@github.com:org/repo.git":                           "git@github.com:org/repo.git",
		"/srv/repo.git":                                         "/srv/repo.git",
		"https://host/%zz":                                      "",
	}
	for in, want := range tests {
		if got := withoutSecret(in); got != want {
			t.Errorf("withoutSecret(%q) = %q, want %q", in, got, want)
		}
	}
}
