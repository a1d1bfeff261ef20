package transport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// maxUnixPath is the longest socket path Linux accepts (sun_path is 108
// bytes including the terminating NUL).
const maxUnixPath = 107

// listenUnix binds a Unix socket that speaks WebSocket over HTTP, as the
// reference's unix:// transport does (so `codex --remote unix://PATH`
// works). A socket file left by a dead server is replaced; one with a live
// server behind it is an "address in use" error. The file is made 0600 and
// is removed when the listener closes.
func listenUnix(ctx context.Context, ep Endpoint, o Options) (Listener, error) {
	path := ep.Addr
	if len(path) > maxUnixPath {
		return nil, fmt.Errorf("listen %s: socket path is %d bytes, longer than the %d the system allows", ep.Raw, len(path), maxUnixPath)
	}
	dirMode := fs.FileMode(0o755)
	if ep.DefaultPath {
		// The default directory holds only our control socket.
		dirMode = 0o700
	}
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return nil, fmt.Errorf("listen %s: %w", ep.Raw, err)
	}
	if err := removeStaleSocket(ctx, path); err != nil {
		return nil, fmt.Errorf("listen %s: %w", ep.Raw, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", ep.Raw, err)
	}
	// Chmod right after bind. The window before it is covered for the
	// default path by its 0700 directory; for a custom path, choose a
	// private directory.
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("listen %s: %w", ep.Raw, err)
	}
	l := newHTTPListener(ln, "unix://"+path, "unix", false, o)
	return l, nil
}

// removeStaleSocket removes a socket file no server answers on. It probes
// first: removing the file of a live server would steal its address.
func removeStaleSocket(ctx context.Context, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "unix", path)
	if err == nil {
		_ = c.Close()
		return fmt.Errorf("address in use: a server is already listening on %s", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("probing existing socket %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale socket %s: %w", path, err)
	}
	return nil
}
