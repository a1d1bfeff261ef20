package transport

import (
	"io"
	"os"
	"sync"

	"github.com/agentd-dev/agentd/server/scope"
)

// StdioFiles are the reader and writer of the stdio endpoint.
type StdioFiles struct {
	In  io.Reader
	Out io.Writer
}

// stdioListener yields exactly one stream: the process's stdin and stdout.
type stdioListener struct {
	opts   Options
	done   chan struct{}
	closed sync.Once
}

func newStdioListener(o Options) *stdioListener {
	return &stdioListener{opts: o, done: make(chan struct{})}
}

func (l *stdioListener) URL() string { return "stdio://" }

func (l *stdioListener) Serve(serve func(Stream)) error {
	in, out := io.Reader(os.Stdin), io.Writer(os.Stdout)
	if l.opts.Stdio != nil {
		in, out = l.opts.Stdio.In, l.opts.Stdio.Out
	}
	closer := func() error {
		// stdin's pending read cannot be interrupted on a blocking pipe;
		// closing stdout tells the peer we are done.
		if c, ok := out.(io.Closer); ok {
			return c.Close()
		}
		return nil
	}
	st := NewNDJSON(in, out, closer, l.opts.MaxMessageBytes, Info{Transport: "stdio", WaitWhenFull: true, DrainOnEOF: true, Scope: scope.Admin})
	serve(st)
	<-l.done
	return nil
}

func (l *stdioListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}
