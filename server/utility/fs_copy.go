package utility

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
	"go.uber.org/zap"
)

// fsCopy copies a file, a symbolic link (as a link) or, with recursive, a
// directory tree. Inside a tree, links are kept as links and special
// files (FIFOs, sockets, devices) are skipped; an existing destination
// directory is merged into and existing files are overwritten. A tree's
// copy stops as fsRemove's removal does, and says how far it got.
func (u *utility) fsCopy(ctx context.Context, r *rpc.Request, p *protocol.FsCopyParams) (*protocol.Empty, error) {
	src, dst := filepath.Clean(string(p.SourcePath)), filepath.Clean(string(p.DestinationPath))
	// The source is read as it is (a link is copied as a link); the
	// destination is written through.
	if err := u.roots().check("fs/copy", src, false); err != nil {
		return nil, err
	}
	if err := u.roots().check("fs/copy", dst, true); err != nil {
		return nil, err
	}
	if err := u.guard.check("fs/copy", dst, true); err != nil {
		return nil, err
	}
	st, err := os.Lstat(src)
	if err != nil {
		return nil, fsError(err)
	}
	switch mode := st.Mode(); {
	case mode.IsDir():
		if !p.Recursive {
			return nil, protocol.InvalidRequest("fs/copy requires recursive: true when sourcePath is a directory")
		}
		if within(resolveExisting(dst), resolveExisting(src)) {
			return nil, protocol.InvalidRequest("fs/copy cannot copy a directory to itself or one of its descendants")
		}
		var n int
		if n, err = copyTree(ctx, src, dst); err != nil && ctx.Err() != nil {
			r.Logger().Warn("fs/copy stopped", zap.String("path", dst), zap.Int("copied", n), zap.NamedError("why", context.Cause(ctx)))
			return nil, stoppedError(ctx, "fs/copy to %s stopped after copying %d entries", protocol.Cut(dst), n)
		}
	case mode&fs.ModeSymlink != 0:
		err = copySymlink(src, dst)
	case mode.IsRegular():
		err = copyFile(src, dst, mode.Perm())
	default:
		return nil, protocol.InvalidRequest("fs/copy only supports regular files, directories, and symlinks")
	}
	if err != nil {
		return nil, fsError(err)
	}
	return &protocol.Empty{}, nil
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, string(os.PathSeparator))+string(os.PathSeparator))
}

// resolveExisting resolves symbolic links in the longest existing prefix
// of path, so that a destination reached through a link is recognised.
func resolveExisting(path string) string {
	rest := ""
	for p := path; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// copyTree copies the directory src to dst, and says how many entries it
// copied; it stops as soon as ctx ends. dst itself was checked against
// the roots with its links resolved, so it is made or entered as it is;
// beneath it, no symbolic link already in the destination is followed: a
// link where the copy would make a directory or write a file is refused
// (errWriteThroughLink), since what it points at was never checked (it
// may lie outside the roots or be a vital path).
func copyTree(ctx context.Context, src, dst string) (copied int, err error) {
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		copied++
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir() && rel == ".":
			return os.MkdirAll(target, mode.Perm()|0o700)
		case mode.IsDir():
			return makeDirNoFollow(target, mode.Perm()|0o700)
		case mode&fs.ModeSymlink != 0:
			return copySymlink(path, target)
		case mode.IsRegular():
			return copyFileNoFollow(path, target, mode.Perm())
		}
		copied-- // FIFOs, sockets and devices are not copied
		return nil
	})
	return copied, err
}

// errWriteThroughLink refuses to make a directory or write a file of a
// tree's copy through a symbolic link already at that place in the
// destination.
func errWriteThroughLink(path string) error {
	return protocol.InvalidRequest("fs/copy will not write through the symbolic link %s in the destination", protocol.Cut(path))
}

// makeDirNoFollow makes the directory path, or accepts the directory
// already there; a symbolic link there (even to a directory) is refused
// rather than entered. Its parent was made or checked the same way.
func makeDirNoFollow(path string, perm fs.FileMode) error {
	err := os.Mkdir(path, perm)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	st, lerr := os.Lstat(path)
	switch {
	case lerr != nil:
		return lerr
	case st.Mode()&fs.ModeSymlink != 0:
		return errWriteThroughLink(path)
	case !st.IsDir():
		return err
	}
	return nil
}

// copySymlink makes dst a link with src's target (replacing a file there).
func copySymlink(src, dst string) error {
	target, err := os.Readlink(src)
	if err != nil {
		return err
	}
	if st, err := os.Lstat(dst); err == nil && !st.IsDir() {
		if err := os.Remove(dst); err != nil {
			return err
		}
	}
	return os.Symlink(target, dst)
}

// copyFile copies a regular file's bytes and permission bits to dst,
// following a link there (a single file's copy, whose destination was
// checked with its links resolved). Copying a file onto itself leaves it
// as it is (truncating the destination would destroy the source).
func copyFile(src, dst string, perm fs.FileMode) error {
	return copyFileTo(src, dst, perm, os.Stat, 0)
}

// copyFileNoFollow is copyFile inside a tree's copy: a symbolic link at
// dst is refused, not written through, and the file is opened with
// O_NOFOLLOW so that a link put there after the check is refused too.
func copyFileNoFollow(src, dst string, perm fs.FileMode) error {
	if st, err := os.Lstat(dst); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return errWriteThroughLink(dst)
	}
	err := copyFileTo(src, dst, perm, os.Lstat, syscall.O_NOFOLLOW)
	if errors.Is(err, syscall.ELOOP) {
		return errWriteThroughLink(dst)
	}
	return err
}

// copyFileTo copies src to dst, stat-ing dst with stat and opening it
// with the extra flags.
func copyFileTo(src, dst string, perm fs.FileMode, stat func(string) (fs.FileInfo, error), flags int) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if dstInfo, err := stat(dst); err == nil {
		if srcInfo, err := in.Stat(); err == nil && os.SameFile(srcInfo, dstInfo) {
			return nil
		}
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|flags, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
