package utility

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
// copied; it stops as soon as ctx ends.
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
		case mode.IsDir():
			return os.MkdirAll(target, mode.Perm()|0o700)
		case mode&fs.ModeSymlink != 0:
			return copySymlink(path, target)
		case mode.IsRegular():
			return copyFile(path, target, mode.Perm())
		}
		copied-- // FIFOs, sockets and devices are not copied
		return nil
	})
	return copied, err
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

// copyFile copies a regular file's bytes and permission bits. Copying a
// file onto itself leaves it as it is (truncating the destination would
// destroy the source).
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if dstInfo, err := os.Stat(dst); err == nil {
		if srcInfo, err := in.Stat(); err == nil && os.SameFile(srcInfo, dstInfo) {
			return nil
		}
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
