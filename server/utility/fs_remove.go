package utility

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
)

// removeBatch is how many directory entries removeTree reads at a time.
const removeBatch = 256

// removeTree removes path and, when it is a directory (not a link to
// one), everything in it, depth first, like os.RemoveAll; but it stops as
// soon as ctx ends (the connection closed, the server shuts down), and it
// counts what it removed.
func removeTree(ctx context.Context, path string) (removed int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	st, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	if st.IsDir() {
		d, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		for {
			names, rerr := d.Readdirnames(removeBatch)
			for _, name := range names {
				n, err := removeTree(ctx, filepath.Join(path, name))
				removed += n
				if err != nil {
					d.Close()
					return removed, err
				}
			}
			if rerr == io.EOF || len(names) == 0 {
				break
			}
			if rerr != nil {
				d.Close()
				return removed, rerr
			}
		}
		d.Close()
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return removed, err
	}
	return removed + 1, nil
}

// stoppedError answers a recursive fs/remove or fs/copy that ctx
// stopped, with what it did (format) and why: -32800 when the client
// cancelled it, -32603 when the connection closed or the server shuts
// down.
func stoppedError(ctx context.Context, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...) + ": " + context.Cause(ctx).Error()
	if rpc.Cancelled(ctx) {
		return rpc.CancelledError("%s", msg)
	}
	return protocol.Errorf(protocol.CodeInternalError, "%s", msg)
}
