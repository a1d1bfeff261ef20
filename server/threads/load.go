package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/google/uuid"
	"go.uber.org/zap"
)

// loadSpec is what a thread is loaded with.
type loadSpec struct {
	// log is the logger of the request that loads the thread.
	log      *zap.Logger
	id       string
	settings threadSettings
	tools    []core.DynamicToolSpec
	rec      *rollout.Recorder // nil: ephemeral
	meta     threadMeta
	history  []model.ResponseItem // a stored thread's model history
	status   protocol.ThreadStatus
	// rawEvents: the client asked for raw events (experimentalRawEvents).
	rawEvents bool
}

// load creates the core session of a thread and registers it. When it
// fails, it closes the thread's recorder.
func (sv *service) load(ls loadSpec) (t *thread, err error) {
	defer func() {
		if err != nil && ls.rec != nil {
			ctx, cancel := context.WithTimeout(context.Background(), unloadTimeout)
			defer cancel()
			_ = ls.rec.Close(ctx)
		}
	}()
	st := ls.settings
	conf := st.cfg
	cfg, err := sv.newSessionConfig(conf, ls.id, st.provider)
	if err != nil {
		return nil, err
	}
	cfg.Model = st.model
	cfg.ContextWindow = contextWindow(st.model)
	if conf.ContextWindow > 0 {
		cfg.ContextWindow = conf.ContextWindow
	}
	cfg.AutoCompactTokens = conf.AutoCompactTokenLimit
	cfg.Verbosity = conf.Verbosity
	cfg.ToolOutputTokenLimit = conf.ToolOutputTokenLimit
	cfg.Cwd = st.cwd
	cfg.ApprovalPolicy = st.approval
	cfg.Sandbox = st.sandbox
	cfg.Effort = st.effort
	cfg.Summary = st.summary
	cfg.Mode = st.mode
	cfg.BaseInstructions = st.baseInstructions
	cfg.DeveloperInstructions = st.developerInstructions
	cfg.ProjectDoc = sv.projectDoc(conf, st.cwd, ls.log.With(zap.String("thread", ls.id)))
	if len(ls.history) == 0 {
		// A thread with a history has its context (skills included)
		// in it already.
		cfg.Skills = sv.skills(conf, st.cwd, ls.log.With(zap.String("thread", ls.id)))
	}
	cfg.DynamicTools = ls.tools
	cfg.Originator = ls.meta.originator
	cfg.UserAgent = st.userAgent
	cfg.History = ls.history
	if ls.rec != nil {
		cfg.Sink = rolloutSink{ls.rec}
	}
	sess, err := core.NewSession(cfg)
	if err != nil {
		return nil, protocol.InvalidRequest("%v", err)
	}
	t = newThread(sv, ls, sess)
	t.instructionSources = cfg.ProjectDoc.Sources
	sv.threads.add(t)
	return t, nil
}

// loadStored loads a stored thread: its history for the model, its
// settings (the last turn's, changed by ov), its rollout reopened.
func (sv *service) loadStored(ctx context.Context, id string, ov overrides) (*thread, *rollout.Thread, threadSettings, error) {
	if _, err := checkID(id); err != nil {
		return nil, nil, threadSettings{}, protocol.InvalidRequest("no rollout found for thread id %s", protocol.Cut(id))
	}
	// A thread being unloaded under this id (gone idle as its client came
	// back) finishes first: its rollout closed, its end announced. The
	// callers wait before they take loadMu; this is for an unload that
	// began since.
	if err := sv.threads.waitUnloaded(ctx, id); err != nil {
		return nil, nil, threadSettings{}, err
	}
	rt, err := sv.store.Read(ctx, id, rollout.ReadOptions{})
	if err != nil {
		return nil, nil, threadSettings{}, storeErr(id, err)
	}
	st, err := sv.apply(sv.storedSettings(ctx, rt), ov)
	if err != nil {
		return nil, nil, st, err
	}
	rec, err := sv.store.Reopen(id)
	if err != nil {
		return nil, nil, st, storeErr(id, err)
	}
	status := protocol.StatusIdle()
	if rt.LastTurnFailed {
		status = protocol.StatusSystemError()
	}
	meta := metaOf(rt)
	meta.cwd, meta.model, meta.effort, meta.provider = st.cwd, st.model, st.effort, st.provider.ID
	t, err := sv.load(loadSpec{log: rpc.Logger(ctx, sv.log), id: id, settings: st, rec: rec, meta: meta, history: rt.History, status: status})
	if err != nil {
		return nil, nil, st, err
	}
	return t, rt, st, nil
}

// loadedThread returns a loaded thread, loading a stored one for c
// (which it subscribes), or the reference's error: an id that is not a
// UUID is "invalid thread id", one with no thread "thread not found".
// Loading on demand means a thread unloaded while a client kept it open
// carries on when that client sends its next turn.
func (sv *service) loadedThread(ctx context.Context, c *rpc.Conn, id string) (*thread, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, protocol.InvalidRequest("invalid thread id: %v", err)
	}
	if t := sv.threads.get(id); t != nil {
		return t, nil
	}
	// Not under loadMu: an unload may take long (a rollout on a failing
	// disk), and other threads load meanwhile.
	if err := sv.threads.waitUnloaded(ctx, id); err != nil {
		return nil, err
	}
	sv.threads.loadMu.Lock()
	defer sv.threads.loadMu.Unlock()
	if t := sv.threads.get(id); t != nil {
		return t, nil
	}
	sv.refreshConfig(ctx, c)
	t, _, _, err := sv.loadStored(ctx, id, overrides{scope: c.Scope(), client: c.ClientInfo()})
	if err != nil {
		// A file that cannot be read says why (-32603); any other refusal
		// is the reference's "thread not found".
		var perr *protocol.Error
		if errors.As(err, &perr) && perr.Code == protocol.CodeInvalidRequest {
			return nil, protocol.InvalidRequest("thread not found: %s", protocol.Cut(id))
		}
		return nil, err
	}
	t.subscribe(c, false)
	return t, nil
}

// heldThread is loadedThread, the thread held (hold) until release is
// called: one whose unload has started is waited for and loaded again.
func (sv *service) heldThread(ctx context.Context, c *rpc.Conn, id string) (t *thread, release func(), err error) {
	for {
		if t, err = sv.loadedThread(ctx, c, id); err != nil {
			return nil, nil, err
		}
		if release, ok := t.hold(); ok {
			return t, release, nil
		}
		if err := sv.threads.waitUnloaded(ctx, id); err != nil {
			return nil, nil, err
		}
	}
}

// storedSettings are the settings a stored thread resumes with: its last
// turn's, over the daemon's defaults.
func (sv *service) storedSettings(ctx context.Context, rt *rollout.Thread) threadSettings {
	st := sv.defaultSettings(ctx)
	if p, ok := providerIn(st.cfg, rt.Meta.ModelProvider); ok {
		st.provider = p
	}
	st.cwd, st.model, st.effort = rt.Meta.Cwd, rt.Meta.Model, rt.Meta.Effort
	st.baseInstructions, st.developerInstructions = rt.Meta.BaseInstructions, rt.Meta.DeveloperInstructions
	if tc := rt.TurnContext; tc != nil {
		st.cwd, st.model, st.effort, st.summary, st.mode = tc.Cwd, tc.Model, tc.Effort, tc.Summary, tc.Mode
		if tc.ApprovalPolicy != "" {
			st.approval = tc.ApprovalPolicy
		}
		if tc.Sandbox.Mode != "" {
			st.sandbox = tc.Sandbox
		}
	}
	if st.model == "" {
		st.model = st.cfg.Model
	}
	return st
}

// settings returns the settings a loaded thread runs its next turn with,
// over its own configuration snapshot (not a reloaded one).
func (t *thread) settings(ctx context.Context, sv *service) threadSettings {
	tc := t.sess.TurnContext()
	st := sv.settingsFrom(ctx, t.cfg)
	st.cwd, st.model, st.effort, st.summary, st.approval, st.sandbox = tc.Cwd, tc.Model, tc.Effort, tc.Summary, tc.ApprovalPolicy, tc.Sandbox
	st.mode = tc.Mode
	t.mu.Lock()
	if p, ok := providerIn(t.cfg, t.meta.provider); ok {
		st.provider = p
	}
	t.mu.Unlock()
	return st
}

// dynamicTools maps the client's tool declarations and validates them.
func dynamicTools(specs []protocol.DynamicToolSpec) ([]core.DynamicToolSpec, error) {
	var out []core.DynamicToolSpec
	add := func(ns string, f *protocol.DynamicFunctionTool) error {
		schema, err := jsonRaw(f.InputSchema)
		if err != nil {
			return protocol.InvalidRequest("Invalid request: dynamicTools: tool %q: %v", protocol.Cut(f.Name), err)
		}
		out = append(out, core.DynamicToolSpec{Name: f.Name, Namespace: ns, Description: f.Description, InputSchema: schema, DeferLoading: f.DeferLoading})
		return nil
	}
	for _, s := range specs {
		switch {
		case s.Function != nil:
			if err := add("", s.Function); err != nil {
				return nil, err
			}
		case s.Namespace != nil:
			for _, t := range s.Namespace.Tools {
				if t.Function != nil {
					if err := add(s.Namespace.Name, t.Function); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	if err := core.ValidateDynamicTools(out); err != nil {
		var deferred *core.DeferredWithoutNamespaceError
		if errors.As(err, &deferred) {
			// The reference's text, as it is.
			return nil, protocol.InvalidRequest("%s", err.Error())
		}
		return nil, protocol.InvalidRequest("Invalid request: %v", err)
	}
	return out, nil
}

// checkID checks a thread id's form (a UUID).
func checkID(id string) (string, error) {
	if _, err := uuid.Parse(id); err != nil {
		return "", fmt.Errorf("invalid thread id %q", protocol.Cut(id))
	}
	return id, nil
}

// storeErr maps store errors to the reference's texts, and a stored
// thread's file that cannot be read (readErr) to an internal error that
// says why.
func storeErr(id string, err error) error {
	var ic *rollout.InvalidCursorError
	switch {
	case errors.Is(err, rollout.ErrNotFound):
		return protocol.InvalidRequest("no rollout found for thread id %s", protocol.Cut(id))
	case errors.As(err, &ic):
		return protocol.InvalidRequest("invalid cursor: %s", protocol.Cut(ic.Cursor))
	}
	if perr := readErr(err, protocol.CodeInternalError, "failed to read thread "+protocol.Cut(id)+": rollout"); perr != nil {
		return perr
	}
	return err
}

// readThread rebuilds a thread from its rollout. A loaded thread is read
// with its running turn, so that turn shows as in progress.
func (sv *service) readThread(ctx context.Context, id string, t *thread) (*rollout.Thread, error) {
	opts := rollout.ReadOptions{SkipHistory: true}
	if t != nil {
		t.mu.Lock()
		opts.RunningTurnID = t.proj.ActiveTurnID()
		t.mu.Unlock()
	}
	return sv.store.Read(ctx, id, opts)
}

// turnsOf returns a loaded or stored thread's turns; a loaded thread that
// has no file yet has none.
func (sv *service) turnsOf(ctx context.Context, id string, t *thread) ([]rollout.Turn, error) {
	rt, err := sv.recordOf(ctx, id, t)
	return rt.Turns, err
}

// recordOf reads a loaded or stored thread's record; a loaded thread that
// has no file yet has an empty one.
func (sv *service) recordOf(ctx context.Context, id string, t *thread) (*rollout.Thread, error) {
	if t != nil && (t.rec == nil || !t.rec.Materialized()) {
		return &rollout.Thread{}, nil
	}
	rt, err := sv.readThread(ctx, id, t)
	if err != nil {
		return &rollout.Thread{}, storeErr(id, err)
	}
	return rt, nil
}

// storedTurns returns the turns of a loaded or stored thread, and the
// spans of its rollout that reverts took out.
func (sv *service) storedTurns(ctx context.Context, id string) ([]rollout.Turn, []rollout.OrdinalSpan, error) {
	t := sv.threads.get(id)
	if t == nil {
		if _, err := checkID(id); err != nil {
			return nil, nil, protocol.InvalidRequest("no rollout found for thread id %s", protocol.Cut(id))
		}
	}
	rt, err := sv.recordOf(ctx, id, t)
	return rt.Turns, rt.Reverted, err
}

// rejectErr converts a core rejection to a JSON-RPC error with its text.
func rejectErr(err error) error {
	var rej *core.RejectError
	if errors.As(err, &rej) {
		return protocol.InvalidRequest("%s", rej.Message)
	}
	return err
}

// jsonRaw encodes v, keeping json.RawMessage as is; nil stays empty.
func jsonRaw(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	}
	return json.Marshal(v)
}
