package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/core/policy"
)

// Defaults of a Manager.
const (
	// DefaultMaxSessions bounds the commands kept running between calls.
	DefaultMaxSessions = 64
	// DefaultOutputCap bounds the output kept per command (aggregated,
	// and per stream): head and tail, the middle dropped with a note.
	DefaultOutputCap = 1 << 20
)

// Errors of the Manager.
var (
	// ErrClosed is returned once Close has been called.
	ErrClosed = errors.New("exec: manager closed")
	// ErrUnknownSession is returned for a session id that does not (or no
	// longer) exist.
	ErrUnknownSession = errors.New("unknown session id")
	// ErrNotTTY is returned when resizing a command without a terminal.
	ErrNotTTY = errors.New("the command has no terminal")
)

// Request describes one command to start.
type Request struct {
	// Argv is the command, e.g. Shell.Argv(script, true). Not empty.
	Argv []string
	// Cwd is the working directory; "" for the daemon's.
	Cwd string
	// BaseEnv, when not nil, is the environment the command starts from
	// (KEY=VALUE entries); nil starts from the daemon's.
	BaseEnv []string
	// Env adds or replaces variables of the base environment; UnsetEnv
	// removes some.
	Env      map[string]string
	UnsetEnv []string
	// TTY runs the command on a pseudo-terminal (one output stream,
	// "stdout", with the terminal's CRLF line ends) of Rows×Cols (24×80
	// when zero).
	TTY        bool
	Rows, Cols uint16
	// YieldTime is how long Start waits before returning a still running
	// command as a session. Zero waits for the end; the command's input
	// is then /dev/null (unless TTY).
	YieldTime time.Duration
	// MaxOutputTokens is copied to the Result, for ModelText.
	MaxOutputTokens int
	// Timeout kills the command (its whole process group) after this
	// long, reporting exit code 124. Zero means no limit.
	Timeout time.Duration
	// Sandbox confines the command; nil runs it unconfined.
	Sandbox *policy.Launcher
	// OnOutput receives the output as it arrives, one chunk at a time,
	// in order, from a goroutine of the manager. chunk belongs to the
	// receiver, which may keep it. OnOutput must return promptly: while
	// it runs, the command's output is not read.
	OnOutput func(stream string, chunk []byte)
}

// Result is what a call learned about a command.
type Result struct {
	// SessionID identifies a command still running after the call; 0
	// for one that has ended.
	SessionID int
	// PID is the command's process id.
	PID int
	// ChunkID names this piece of output (6 hex digits).
	ChunkID string
	// Running is set when the command was still running at the end of
	// the call.
	Running bool
	// ExitCode is the exit status when !Running; 128+n after signal n,
	// 124 after the timeout.
	ExitCode int
	// TimedOut is set when the timeout killed the command.
	TimedOut bool
	// Wall is the time the call took.
	Wall time.Duration
	// Duration is the command's run time, once it ended.
	Duration time.Duration
	// Output is what the command printed since the previous call (head
	// and tail within the manager's output cap), as valid UTF-8.
	Output string
	// OutputBytes is the size of that output before capping.
	OutputBytes int64
	// Aggregated is everything the command printed (both streams, in
	// arrival order, capped), once it ended.
	Aggregated string
	// Stdout and Stderr are the streams apart (capped), once it ended. A
	// terminal has only Stdout.
	Stdout, Stderr string
	// Notes are remarks for the model, such as a session ended to make
	// room.
	Notes []string
	// MaxOutputTokens bounds Output in ModelText; 0 means the default.
	MaxOutputTokens int
}

// SessionInfo describes a running session.
type SessionInfo struct {
	ID      int
	PID     int
	Argv    []string
	TTY     bool
	Started time.Time
	// Running is false for a session that ended but whose last output
	// has not been collected.
	Running bool
}

// Options configures a Manager. Zero fields take the defaults.
type Options struct {
	MaxSessions int
	OutputCap   int
	// OnEvict, when set, is told the id of a session ended to make room
	// for a new one (called without the manager's lock held).
	OnEvict func(id int)
}

// Manager starts commands and keeps the ones that outlive their call as
// sessions. All methods are safe for concurrent use.
type Manager struct {
	maxSessions int
	outputCap   int
	onEvict     func(id int)

	// mu guards the fields that follow.
	mu       sync.Mutex
	closed   bool
	nextID   int
	live     map[*process]struct{} // every command not yet finished with
	sessions map[int]*process
	// lingering are the process groups of ended commands that still had
	// members (a child left running in the background), with those
	// members: Close kills a group only while one of them is still in it,
	// so that nothing a command started outlives the manager, and a
	// group id reused later is never killed.
	lingering map[int][]member
}

// NewManager returns a manager with the given options.
func NewManager(o Options) *Manager {
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.OutputCap <= 0 {
		o.OutputCap = DefaultOutputCap
	}
	return &Manager{
		maxSessions: o.MaxSessions,
		outputCap:   o.OutputCap,
		onEvict:     o.OnEvict,
		live:        make(map[*process]struct{}),
		sessions:    make(map[int]*process),
		lingering:   make(map[int][]member),
	}
}

// Start runs req.Argv and waits until it ends, req.YieldTime passes, or
// ctx is done. A command still running at the yield time stays running
// as a session (Result.SessionID). When ctx is done first, the command's
// process group is killed and the error is ctx.Err(), with the Result of
// what it printed. An error without a Result means it did not start.
func (m *Manager) Start(ctx context.Context, req Request) (*Result, error) {
	if len(req.Argv) == 0 {
		return nil, errors.New("exec: empty command")
	}
	argv := req.Argv
	if req.Sandbox != nil {
		var err error
		if argv, err = req.Sandbox.Wrap(argv, req.Cwd); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	m.mu.Unlock()

	began := time.Now()
	interactive := req.YieldTime > 0
	p, err := startProcess(argv, req, m.outputCap, interactive)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", req.Argv[0], err)
	}
	p.argv = req.Argv // what the model asked for, not the sandbox wrapper

	// Registered before any output is read, so that Close, even one
	// prompted by this command's first output, finds it.
	m.mu.Lock()
	closed := m.closed
	if !closed {
		m.live[p] = struct{}{}
	}
	m.mu.Unlock()
	p.begin()
	if closed {
		p.kill("manager closed")
		<-p.exited
		return nil, ErrClosed
	}

	if req.Timeout > 0 {
		t := time.AfterFunc(req.Timeout, p.timeout)
		go func() { <-p.exited; t.Stop() }()
	}
	go func() {
		<-p.exited
		m.mu.Lock()
		// A session keeps its process until its end is collected.
		if !m.isSessionLocked(p) {
			delete(m.live, p)
		}
		m.noteLingeringLocked(p.pid)
		m.mu.Unlock()
	}()

	var yield <-chan time.Time
	if interactive {
		t := time.NewTimer(req.YieldTime)
		defer t.Stop()
		yield = t.C
	}
	select {
	case <-p.exited:
	case <-yield:
		if !p.done() {
			res := m.collect(p, began, req.MaxOutputTokens)
			res.Notes = m.register(p, res)
			return res, nil
		}
	case <-ctx.Done():
		p.kill("interrupted")
		<-p.exited
		return m.collect(p, began, req.MaxOutputTokens), ctx.Err()
	}
	return m.collect(p, began, req.MaxOutputTokens), nil
}

// register makes p a session, ending the least recently used session
// when there are too many. It returns notes about what it ended.
func (m *Manager) register(p *process, res *Result) []string {
	m.mu.Lock()
	m.nextID++
	id := m.nextID
	res.SessionID = id
	var victim *process
	var victimID int
	if len(m.sessions) >= m.maxSessions {
		victimID, victim = m.lruLocked()
		delete(m.sessions, victimID)
		delete(m.live, victim)
	}
	m.sessions[id] = p
	if p.done() {
		// It ended while we registered; the next call collects it.
		m.live[p] = struct{}{}
	}
	m.mu.Unlock()
	if victim == nil {
		return nil
	}
	victim.kill("too many sessions")
	if m.onEvict != nil {
		m.onEvict(victimID)
	}
	return []string{fmt.Sprintf("session %d (%s) was terminated: at most %d sessions can be open at once",
		victimID, policy.ShellQuote(victim.argv), m.maxSessions)}
}

// lruLocked picks the session to end: an ended one first, otherwise the
// one unused for longest.
func (m *Manager) lruLocked() (int, *process) {
	bestID, best := 0, (*process)(nil)
	var bestUsed time.Time
	bestDone := false
	for id, p := range m.sessions {
		p.mu.Lock()
		used := p.lastUsed
		p.mu.Unlock()
		done := p.done()
		better := best == nil ||
			(done && !bestDone) ||
			(done == bestDone && used.Before(bestUsed))
		if better {
			bestID, best, bestUsed, bestDone = id, p, used, done
		}
	}
	return bestID, best
}

func (m *Manager) isSessionLocked(p *process) bool {
	for _, s := range m.sessions {
		if s == p {
			return true
		}
	}
	return false
}

// collect takes the output since the last call and, if the command has
// ended, its exit.
func (m *Manager) collect(p *process, began time.Time, maxTokens int) *Result {
	done := p.done()
	// Hold emitMu so no chunk is half-recorded.
	p.emitMu.Lock()
	p.mu.Lock()
	res := &Result{
		PID:             p.pid,
		ChunkID:         newChunkID(),
		Running:         !done,
		MaxOutputTokens: maxTokens,
	}
	if p.interactive {
		res.Output, res.OutputBytes = p.pending.String(), p.pending.Total()
		p.pending.Reset()
	}
	p.lastUsed = time.Now()
	if done {
		res.ExitCode = p.exitCode
		res.TimedOut = p.timedOut
		res.Duration = p.ended.Sub(p.started)
		res.Aggregated = p.agg.String()
		// Share the aggregate when one stream carried everything: a
		// megabyte copied once, not three times.
		switch {
		case p.stderr.Total() == 0:
			res.Stdout = res.Aggregated
		case p.stdout.Total() == 0:
			res.Stderr = res.Aggregated
		default:
			res.Stdout, res.Stderr = p.stdout.String(), p.stderr.String()
		}
		if !p.interactive {
			// Called once, at the end: the output is everything.
			res.Output, res.OutputBytes = res.Aggregated, p.agg.Total()
		}
	}
	p.mu.Unlock()
	p.emitMu.Unlock()
	res.Wall = time.Since(began)
	return res
}

// WriteStdin writes chars (which may be empty, to only poll) to the
// input of session id, waits up to yield for it to end, and returns the
// output since the previous call. A session that has ended is removed
// and its exit reported.
func (m *Manager) WriteStdin(ctx context.Context, id int, chars string, yield time.Duration) (*Result, error) {
	began := time.Now()
	m.mu.Lock()
	p, ok := m.sessions[id]
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if !ok {
		return nil, fmt.Errorf("%w %d", ErrUnknownSession, id)
	}
	if chars != "" {
		if err := p.writeStdin(chars, time.Now().Add(max(yield, time.Second))); err != nil {
			return nil, fmt.Errorf("session %d: %w", id, err)
		}
	}
	t := time.NewTimer(yield)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
	case <-ctx.Done():
	}
	res := m.collect(p, began, 0)
	if res.Running {
		res.SessionID = id
	} else {
		m.forget(id, p)
	}
	return res, ctx.Err()
}

// CloseStdin ends the input of session id (see process.closeStdin).
func (m *Manager) CloseStdin(id int) error {
	m.mu.Lock()
	p, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w %d", ErrUnknownSession, id)
	}
	return p.closeStdin()
}

func (m *Manager) forget(id int, p *process) {
	m.mu.Lock()
	if m.sessions[id] == p {
		delete(m.sessions, id)
	}
	delete(m.live, p)
	m.mu.Unlock()
}

// Sessions lists the open sessions by id.
func (m *Manager) Sessions() []SessionInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]SessionInfo, 0, len(m.sessions))
	for id, p := range m.sessions {
		out = append(out, SessionInfo{ID: id, PID: p.pid, Argv: p.argv, TTY: p.tty, Started: p.started, Running: !p.done()})
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return a.ID - b.ID })
	return out
}

// Terminate kills session id's process group, waits for it to end and
// removes the session, returning its last output.
func (m *Manager) Terminate(id int) (*Result, error) {
	began := time.Now()
	m.mu.Lock()
	p, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w %d", ErrUnknownSession, id)
	}
	p.kill("terminated")
	<-p.exited
	res := m.collect(p, began, 0)
	m.forget(id, p)
	return res, nil
}

// Resize changes the terminal size of session id.
func (m *Manager) Resize(id int, rows, cols uint16) error {
	m.mu.Lock()
	p, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w %d", ErrUnknownSession, id)
	}
	if !p.tty {
		return ErrNotTTY
	}
	if p.done() {
		return nil
	}
	return setWinsize(p.master, rows, cols)
}

// noteLingeringLocked remembers the group of an ended command, with its
// members, when some of it still runs, and forgets the groups whose
// members are all gone. m.mu must be held.
func (m *Manager) noteLingeringLocked(pgid int) {
	for g, members := range m.lingering {
		if !anyStillIn(members, g) {
			delete(m.lingering, g)
		}
	}
	if pgid > 0 && syscall.Kill(-pgid, 0) == nil {
		if members := groupMembers(pgid); len(members) > 0 {
			m.lingering[pgid] = members
		}
	}
}

// anyStillIn reports whether one of members is still in group g.
func anyStillIn(members []member, g int) bool {
	for _, mb := range members {
		if mb.stillIn(g) {
			return true
		}
	}
	return false
}

// Close kills every command the manager started that is still running
// (sessions and commands inside a Start call alike), and what ended
// commands left running in their process groups, and waits for the
// commands to end. Later calls fail with ErrClosed. Close is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	for g, members := range m.lingering {
		if anyStillIn(members, g) {
			_ = syscall.Kill(-g, syscall.SIGKILL)
		}
	}
	m.lingering = make(map[int][]member)
	procs := make([]*process, 0, len(m.live))
	for p := range m.live {
		procs = append(procs, p)
	}
	m.sessions = make(map[int]*process)
	m.live = make(map[*process]struct{})
	m.mu.Unlock()
	for _, p := range procs {
		p.kill("manager closed")
	}
	for _, p := range procs {
		<-p.exited
	}
	return nil
}
