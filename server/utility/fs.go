package utility

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
	"go.uber.org/zap"
)

// The fs/* methods act on the daemon's file system with the daemon's own
// rights, as the reference's do: no sandbox applies to them (see
// docs/protocol.md). Paths are absolute (the protocol decoder rejects
// relative ones with the reference's message); bytes travel as base64.

// base64Len is the length of n bytes in padded base64.
func base64Len(n int64) int64 { return (n + 2) / 3 * 4 }

// fsReadFile returns a file's bytes.
func (u *utility) fsReadFile(_ context.Context, _ *rpc.Request, p *protocol.FsPathParams) (*protocol.FsReadFileResponse, error) {
	if err := u.roots().check("fs/readFile", string(p.Path), true); err != nil {
		return nil, err
	}
	f, err := os.Open(string(p.Path))
	if err != nil {
		return nil, fsError(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fsError(err)
	}
	if st.IsDir() {
		return nil, fsError(&fs.PathError{Op: "read", Path: string(p.Path), Err: errIsDir})
	}
	// The answer is one message: a file whose base64 would not fit is
	// refused rather than sent as a message the client must drop.
	limit := int64(u.config().Server.MaxMessageBytes) - 1024
	if base64Len(st.Size()) > limit {
		return nil, protocol.Errorf(protocol.CodeInternalError,
			"fs/readFile: %s is %d bytes, too large for one message (at most %d bytes of base64)", protocol.Cut(string(p.Path)), st.Size(), limit)
	}
	data, err := readAllLimited(f, limit/4*3+1)
	if err != nil {
		return nil, fsError(err)
	}
	return &protocol.FsReadFileResponse{DataBase64: base64.StdEncoding.EncodeToString(data)}, nil
}

// fsWriteFile creates or truncates a file and writes the bytes.
func (u *utility) fsWriteFile(_ context.Context, _ *rpc.Request, p *protocol.FsWriteFileParams) (*protocol.Empty, error) {
	// The guard and the write see the same path: a trailing "/" or "/."
	// would make the system follow a final link the guard did not.
	path := filepath.Clean(string(p.Path))
	if err := u.roots().check("fs/writeFile", path, true); err != nil {
		return nil, err
	}
	if err := u.guard.check("fs/writeFile", path, true); err != nil {
		return nil, err
	}
	data, err := base64.StdEncoding.DecodeString(p.DataBase64)
	if err != nil {
		return nil, protocol.InvalidRequest("fs/writeFile requires valid base64 dataBase64: %v", err)
	}
	if err := os.WriteFile(path, data, 0o666); err != nil {
		return nil, fsError(err)
	}
	return &protocol.Empty{}, nil
}

// fsCreateDirectory creates a directory, with its parents unless
// recursive is false.
func (u *utility) fsCreateDirectory(_ context.Context, _ *rpc.Request, p *protocol.FsCreateDirectoryParams) (*protocol.Empty, error) {
	if err := u.roots().check("fs/createDirectory", string(p.Path), true); err != nil {
		return nil, err
	}
	var err error
	if p.Recursive == nil || *p.Recursive {
		err = os.MkdirAll(string(p.Path), 0o777)
	} else {
		err = os.Mkdir(string(p.Path), 0o777)
	}
	if err != nil {
		return nil, fsError(err)
	}
	return &protocol.Empty{}, nil
}

// fsGetMetadata describes a path. isFile and isDirectory follow a
// symbolic link (a link to a file is a file and a symlink); a dangling
// link is only a symlink.
func (u *utility) fsGetMetadata(_ context.Context, _ *rpc.Request, p *protocol.FsPathParams) (*protocol.FsGetMetadataResponse, error) {
	path := string(p.Path)
	// Followed: what a link points to is reported.
	if err := u.roots().check("fs/getMetadata", path, true); err != nil {
		return nil, err
	}
	lst, err := os.Lstat(path)
	if err != nil {
		return nil, fsError(err)
	}
	st := lst
	isLink := lst.Mode()&fs.ModeSymlink != 0
	followed := false
	if isLink {
		if target, err := os.Stat(path); err == nil {
			st, followed = target, true
		}
	}
	out := protocol.FsGetMetadataResponse{
		IsSymlink:    isLink,
		IsDirectory:  st.IsDir(),
		IsFile:       st.Mode().IsRegular(),
		ModifiedAtMs: st.ModTime().UnixMilli(),
		CreatedAtMs:  birthTimeMs(path, followed),
	}
	return &out, nil
}

// fsReadDirectory lists a directory's entries by name. Like
// fs/getMetadata, a symbolic link reports what it points to.
func (u *utility) fsReadDirectory(_ context.Context, _ *rpc.Request, p *protocol.FsPathParams) (*protocol.FsReadDirectoryResponse, error) {
	if err := u.roots().check("fs/readDirectory", string(p.Path), true); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(string(p.Path))
	if err != nil {
		return nil, fsError(err)
	}
	out := protocol.FsReadDirectoryResponse{Entries: make(protocol.List[protocol.FsReadDirectoryEntry], 0, len(entries))}
	for _, e := range entries {
		mode := e.Type()
		if mode&fs.ModeSymlink != 0 {
			if st, err := os.Stat(string(p.Path) + string(os.PathSeparator) + e.Name()); err == nil {
				mode = st.Mode().Type()
			}
		}
		out.Entries = append(out.Entries, protocol.FsReadDirectoryEntry{
			FileName: e.Name(), IsDirectory: mode.IsDir(), IsFile: mode.IsRegular(),
		})
	}
	return &out, nil
}

// fsRemove removes a path: a directory with its contents unless
// recursive is false; a missing path is fine unless force is false. The
// guard refuses the paths whose loss would wreck the machine; a
// recursive remove stops when the client cancels it ($/cancelRequest),
// the connection closes or the server shuts down, and says how far it
// got.
func (u *utility) fsRemove(ctx context.Context, r *rpc.Request, p *protocol.FsRemoveParams) (*protocol.Empty, error) {
	// Cleaned, for the guard and the removal alike: "link/" or "link/."
	// would have the system follow the link (and empty its target) where
	// the guard saw the link itself, and "link/.." would lead elsewhere.
	path := filepath.Clean(string(p.Path))
	// Not followed: a link in a root that points elsewhere is removed,
	// not what it points to.
	if err := u.roots().check("fs/remove", path, false); err != nil {
		return nil, err
	}
	if err := u.guard.check("fs/remove", path, false); err != nil {
		return nil, err
	}
	recursive := p.Recursive == nil || *p.Recursive
	force := p.Force == nil || *p.Force
	if _, err := os.Lstat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) && force {
			return &protocol.Empty{}, nil
		}
		return nil, fsError(err)
	}
	var err error
	if recursive {
		var n int
		if n, err = removeTree(ctx, path); err != nil && ctx.Err() != nil {
			r.Logger().Warn("fs/remove stopped", zap.String("path", path), zap.Int("removed", n), zap.NamedError("why", context.Cause(ctx)))
			return nil, stoppedError(ctx, "fs/remove of %s stopped after removing %d entries", protocol.Cut(path), n)
		}
	} else {
		err = os.Remove(path)
	}
	if err != nil && !(force && errors.Is(err, fs.ErrNotExist)) {
		return nil, fsError(err)
	}
	return &protocol.Empty{}, nil
}

// errIsDir is what reading a directory as a file gives.
var errIsDir error = syscall.EISDIR

// readAllLimited reads r to its end, failing past limit bytes (a file that
// grew after it was measured).
func readAllLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errors.New("the file grew past the message size limit while it was read")
	}
	return data, nil
}
