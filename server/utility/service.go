package utility

import (
	"context"
	"sync"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc"
	"go.uber.org/zap"
)

// errShuttingDown answers utility requests that arrive while the server
// drains.
var errShuttingDown = protocol.Errorf(protocol.CodeInternalError, "the server is shutting down")

// Options configure the utility methods.
type Options struct {
	// Live is the configuration in use, reloaded after each config
	// write; when nil, Config is used for good.
	Live   *config.Live
	Config *config.Config
	Log    *zap.Logger
	// Cwd is the daemon's working directory, where relative paths start.
	Cwd string
	// ConfigWritten, when set, is called (on its own goroutine) after
	// each config write to a configuration that cannot reload (Live nil),
	// so that what applies at once does; a reloadable one tells its
	// OnReload listeners instead.
	ConfigWritten func()
}

// utility serves the methods that need no thread: command/exec, fs/*,
// fuzzyFileSearch, config/read and the config writes. Processes and
// watches belong to the connection that started them and end with it.
type utility struct {
	live *config.Live
	log  *zap.Logger
	cwd  string
	// configWritten is Options.ConfigWritten.
	configWritten func()
	// guard refuses destructive fs/* requests at vital paths.
	guard guard

	// configMu serialises config writes, so that a version check and the
	// write it guards are one step.
	configMu sync.Mutex

	// mu guards the fields that follow.
	mu       sync.Mutex
	conns    map[*rpc.Conn]*connUtil
	searches map[searchKey]*fuzzySearch
	draining bool
	// execAddedCh is closed (and replaced) whenever a command/exec
	// process is registered.
	execAddedCh chan struct{}
}

func newUtility(opts Options) *utility {
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	live := opts.Live
	if live == nil {
		live = config.Fixed(opts.Config)
	}
	home := ""
	if cfg := live.Get(); cfg != nil {
		home = cfg.Home
	}
	return &utility{live: live, log: log, cwd: opts.Cwd, guard: newGuard(userHome(), home), conns: map[*rpc.Conn]*connUtil{},
		searches: map[searchKey]*fuzzySearch{}, execAddedCh: make(chan struct{}), configWritten: opts.ConfigWritten}
}

// config is the configuration in use now.
func (u *utility) config() *config.Config { return u.live.Get() }

// Register registers the utility methods on s; their processes and
// watches stop when s drains.
func Register(s *rpc.Server, opts Options) *Service {
	u := newUtility(opts)
	s.OnDrain(u.drain)
	// A connection's config reads and writes are handled in the order it
	// sent them (a write, then the read of what it wrote).
	rpc.Order(s, rpc.Fixed("config"), "config/read", "config/value/write", "config/batchWrite", "skills/list", "skills/config/write")

	rpc.Handle(s, "command/exec", u.commandExec)
	rpc.Handle(s, "command/exec/write", u.commandExecWrite)
	rpc.Handle(s, "command/exec/terminate", u.commandExecTerminate)
	rpc.Handle(s, "command/exec/resize", u.commandExecResize)

	rpc.Handle(s, "fs/readFile", u.fsReadFile)
	rpc.Handle(s, "fs/writeFile", u.fsWriteFile)
	rpc.Handle(s, "fs/createDirectory", u.fsCreateDirectory)
	rpc.Handle(s, "fs/getMetadata", u.fsGetMetadata)
	rpc.Handle(s, "fs/readDirectory", u.fsReadDirectory)
	rpc.Handle(s, "fs/remove", u.fsRemove)
	rpc.Handle(s, "fs/copy", u.fsCopy)
	rpc.Handle(s, "fs/watch", u.fsWatch)
	rpc.Handle(s, "fs/unwatch", u.fsUnwatch)

	rpc.Handle(s, "fuzzyFileSearch", u.fuzzyFileSearch)

	// What stops cleanly midway and says what it did.
	rpc.Cancellable(s, "command/exec", "fs/remove", "fs/copy", "fuzzyFileSearch")

	rpc.Handle(s, "config/read", u.configRead)
	rpc.Handle(s, "config/value/write", u.configValueWrite)
	rpc.Handle(s, "config/batchWrite", u.configBatchWrite)

	rpc.Handle(s, "skills/list", u.skillsList)
	rpc.Handle(s, "skills/config/write", u.skillsConfigWrite)
	return &Service{u: u}
}

// connUtil is what one connection owns: its command/exec processes and
// its fs watches.
type connUtil struct {
	u *utility
	c *rpc.Conn

	// mu guards the fields that follow.
	mu      sync.Mutex
	closed  bool
	execs   *execTable
	watches *watchSet
}

// forConn returns c's state, creating it on first use. The state is
// dropped, and everything in it stopped, when c ends; everything in it is
// stopped when c's input ends (a stdio client's EOF).
func (u *utility) forConn(c *rpc.Conn) (*connUtil, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if cu := u.conns[c]; cu != nil {
		return cu, nil
	}
	if u.draining {
		return nil, errShuttingDown
	}
	if c.Context().Err() != nil {
		return nil, rpc.ErrConnClosed
	}
	cu := &connUtil{u: u, c: c}
	u.conns[c] = cu
	// Runs on its own goroutine, so taking u.mu there is fine.
	c.OnClose(func() { u.dropConn(c) })
	// A stdio client that closed its input is leaving: its processes are
	// killed then (their requests answer with the exit), not at the end
	// of the drain that waits for those requests.
	c.OnInputEnd(cu.close)
	return cu, nil
}

// dropConn stops what c owned.
func (u *utility) dropConn(c *rpc.Conn) {
	u.mu.Lock()
	cu := u.conns[c]
	delete(u.conns, c)
	for k, s := range u.searches {
		if k.conn == c.ID() {
			s.cancel()
			delete(u.searches, k)
		}
	}
	u.mu.Unlock()
	if cu != nil {
		cu.close()
	}
}

// drain runs when the server shuts down: command/exec processes are
// killed at once (their requests then answer with the exit), so that
// a long command does not hold up the shutdown; watches stop.
func (u *utility) drain(context.Context) {
	u.mu.Lock()
	u.draining = true
	conns := make([]*connUtil, 0, len(u.conns))
	for _, cu := range u.conns {
		conns = append(conns, cu)
	}
	for k, s := range u.searches {
		s.cancel()
		delete(u.searches, k)
	}
	u.mu.Unlock()
	var wg sync.WaitGroup
	for _, cu := range conns {
		wg.Go(cu.close)
	}
	wg.Wait()
}

// close kills the connection's processes and stops its watches. It is
// idempotent.
func (cu *connUtil) close() {
	cu.mu.Lock()
	cu.closed = true
	execs, watches := cu.execs, cu.watches
	cu.mu.Unlock()
	if execs != nil {
		execs.close()
	}
	if watches != nil {
		watches.close()
	}
}

// execTable returns the connection's process table, creating it on first
// use.
func (cu *connUtil) execTable() (*execTable, error) {
	cu.mu.Lock()
	defer cu.mu.Unlock()
	if cu.closed {
		return nil, errClosedConnUtil(cu)
	}
	if cu.execs == nil {
		cu.execs = newExecTable(cu.c, cu.u.config().Server.MaxInflightPerConnection)
	}
	return cu.execs, nil
}

// watchSet returns the connection's watches, creating them on first use.
func (cu *connUtil) watchSet() (*watchSet, error) {
	cu.mu.Lock()
	defer cu.mu.Unlock()
	if cu.closed {
		return nil, errClosedConnUtil(cu)
	}
	if cu.watches == nil {
		ws, err := newWatchSet(cu.c)
		if err != nil {
			return nil, err
		}
		cu.watches = ws
	}
	return cu.watches, nil
}

// errClosedConnUtil says why a closed connection state cannot be used:
// the connection ended, or the server is draining.
func errClosedConnUtil(cu *connUtil) error {
	if cu.c.Context().Err() != nil {
		return rpc.ErrConnClosed
	}
	return errShuttingDown
}
