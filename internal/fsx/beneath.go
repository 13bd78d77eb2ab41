package fsx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLinkBeneath is returned (wrapped) by OpenDirBeneath for a component of the path below its
// root that is a symbolic link (never followed) or not a directory.
var ErrLinkBeneath = errors.New("not a real directory")

// OpenDirBeneath opens the directory rel below root, one component at a time with O_NOFOLLOW
// (openat), so that no component below root is resolved through a symbolic link; root itself
// is the caller's and may be reached through one. A component that is a link or no directory
// is an error wrapping ErrLinkBeneath that names it (and a link's target). With mkdir, missing
// components are created, 0700. rel must be local (no "..", not absolute); "" or "." is root.
//
// Each component is opened from the descriptor of the one before, so a link planted anywhere
// below root after the call cannot redirect what is done through the returned directory.
func OpenDirBeneath(root, rel string, mkdir bool) (*os.File, error) {
	rel = filepath.Clean(rel)
	if !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("%s is not a path below %s", rel, root)
	}
	fd, err := openDir(unix.AT_FDCWD, root, false)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	at := root
	if rel != "." {
		for _, name := range strings.Split(rel, string(filepath.Separator)) {
			at = filepath.Join(at, name)
			next, err := openDir(fd, name, true)
			if errors.Is(err, unix.ENOENT) && mkdir {
				if err = unix.Mkdirat(fd, name, 0o700); err == nil || errors.Is(err, unix.EEXIST) {
					next, err = openDir(fd, name, true)
				}
			}
			if err != nil {
				unix.Close(fd)
				return nil, beneathError(at, err)
			}
			unix.Close(fd)
			fd = next
		}
	}
	return os.NewFile(uintptr(fd), at), nil
}

// openDir opens name (relative to dirfd) as a directory; nofollow refuses a final link.
func openDir(dirfd int, name string, nofollow bool) (int, error) {
	flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	if nofollow {
		flags |= unix.O_NOFOLLOW
	}
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// beneathError says what was found at path in place of a real directory.
func beneathError(path string, err error) error {
	if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	// Linux says ENOTDIR of a link opened with O_NOFOLLOW|O_DIRECTORY, as of a file: look.
	if target, lerr := os.Readlink(path); lerr == nil {
		return &notRealDir{fmt.Sprintf("%s is a symbolic link (to %s), which is not followed", path, target)}
	}
	return &notRealDir{fmt.Sprintf("%s is not a directory", path)}
}

// notRealDir is ErrLinkBeneath with what was found, in its own words.
type notRealDir struct{ msg string }

func (e *notRealDir) Error() string        { return e.msg }
func (e *notRealDir) Is(target error) bool { return target == ErrLinkBeneath }

// RemoveAt removes name from the open directory dir, never through a link: a link (or any
// other file) is unlinked itself, its target untouched; a directory is emptied depth first,
// each subdirectory opened with O_NOFOLLOW from its parent's descriptor, then removed. It says
// whether anything was there.
func RemoveAt(dir *os.File, name string) (existed bool, err error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return false, fmt.Errorf("%q is no name in %s", name, dir.Name())
	}
	err = removeAllAt(int(dir.Fd()), name, filepath.Join(dir.Name(), name))
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return err == nil, err
}

// removeAllAt removes name in dirfd and everything below it; path names it in errors.
func removeAllAt(dirfd int, name, path string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || !(errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM)) {
		return pathErr("unlink", path, err)
	}
	// A directory (unlink says EISDIR on Linux, EPERM elsewhere). What its entries are is read
	// whole before any is removed: removing while reading may skip entries.
	for tries := 0; ; tries++ {
		fd, err := openDir(dirfd, name, true)
		if err != nil {
			return pathErr("open", path, err)
		}
		d := os.NewFile(uintptr(fd), path)
		names, err := d.Readdirnames(-1)
		if err == nil {
			for _, n := range names {
				if err = removeAllAt(fd, n, filepath.Join(path, n)); err != nil && !errors.Is(err, unix.ENOENT) {
					break
				}
				err = nil
			}
		}
		d.Close()
		if err != nil {
			return err
		}
		err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		// A process still writing there adds entries meanwhile: read it again, a few times.
		if errors.Is(err, unix.ENOTEMPTY) && tries < 3 {
			continue
		}
		return pathErr("remove", path, err)
	}
}

func pathErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: path, Err: err}
}
