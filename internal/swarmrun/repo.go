package swarmrun

import (
	"cmp"
	"context"
	"net/url"
	"path/filepath"
	"strings"
)

// RepoURL is what the execution state records as its repo (seed 001: "Git repository URL"):
// the repository's origin URL when it has one, without the credentials such a URL may carry,
// else the repository's absolute path. The manifest's repo is a path relative to the manifest
// ("." by default), which says nothing once the state is read elsewhere.
func RepoURL(ctx context.Context, dir string) string {
	if u, err := gitCmd(ctx, dir, "config", "--get", "remote.origin.url"); err == nil {
		if u = withoutSecret(u); u != "" {
			return u
		}
	}
	// Abs is "" when it fails.
	abs, _ := filepath.Abs(dir)
	return cmp.Or(abs, dir)
}

// withoutSecret drops what a URL's user part may hide: a password always, and the user too
// for http(s), where it is commonly a token (https://TOKEN@github.com/org/repo). An ssh user
// (ssh://git@host/repo, git@host:repo) is a name, kept. "" when the URL cannot be read.
func withoutSecret(raw string) string {
	if !strings.Contains(raw, "://") {
		return raw // scp-like (git@host:org/repo) or a path: nothing secret
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	// Password and Username answer for a URL without a user part (nil) too: nothing to drop.
	switch _, hasPassword := u.User.Password(); {
	case u.Scheme == "http" || u.Scheme == "https":
		u.User = nil
	case hasPassword:
		u.User = url.User(u.User.Username())
	}
	return u.String()
}
