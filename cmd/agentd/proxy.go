package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentd-dev/agentd/server/transport"
)

// newProxyCmd is `app-server proxy`: a byte pipe between stdio and a
// running daemon's Unix socket. The client speaks WebSocket through it, as
// through the reference's proxy: this is how a front end reaches a daemon
// over SSH.
func newProxyCmd(g *globalFlags) *cobra.Command {
	var sock string
	cmd := &cobra.Command{
		Use:   "proxy [--sock PATH]",
		Short: "Pipe stdio to a running daemon's Unix socket (WebSocket over it)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if sock == "" {
				opts, err := g.configOptions()
				if err != nil {
					return err
				}
				sock = transport.DefaultUnixSocket(opts.Home)
			}
			return proxy(sock, os.Stdin, os.Stdout)
		},
	}
	cmd.Flags().StringVar(&sock, "sock", "", "the daemon's Unix socket (default: the one unix:// listens on)")
	return cmd
}

// proxy copies in to the socket and the socket to out until the daemon
// closes the connection; at the end of in, it closes its half and goes on
// reading.
func proxy(sock string, in io.Reader, out io.Writer) error {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return fmt.Errorf("cannot connect to the app-server socket %s: %w", sock, err)
	}
	defer conn.Close()
	go func() {
		_, _ = io.Copy(conn, in)
		if uc, ok := conn.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		}
	}()
	if _, err := io.Copy(out, conn); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
