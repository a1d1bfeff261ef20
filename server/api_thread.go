package server

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/protocol"
)

// registerThreadAPI registers the thread methods.
func (a *app) registerThreadAPI() {
	a.s.Handle("thread/start", a.threadStart)
	a.s.Handle("thread/unsubscribe", a.threadUnsubscribe)
	a.s.Handle("thread/loaded/list", a.threadLoadedList)
}

// persistOnStartKey, in thread/start's config, asks for the rollout file
// to be written at once rather than at the first turn (an agentd
// extension; see docs/protocol.md).
const persistOnStartKey = "persist_on_start"

// sessionSource is what app-server threads report as their source, as the
// reference does.
const sessionSource = protocol.SessionSourceKind("vscode")

func (a *app) threadStart(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadStartParams)
	if err := validApproval(p.ApprovalPolicy); err != nil {
		return nil, err
	}
	st, err := a.apply(a.defaultSettings(), overrides{
		model: p.Model, provider: p.ModelProvider, cwd: p.Cwd, approval: p.ApprovalPolicy, sandbox: p.Sandbox,
		config: p.Config, baseInstructions: p.BaseInstructions, developerInstructions: p.DeveloperInstructions,
	})
	if err != nil {
		return nil, err
	}
	tools, err := dynamicTools(p.DynamicTools)
	if err != nil {
		return nil, err
	}
	uid, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	id := uid.String()
	now := time.Now()
	ephemeral := p.Ephemeral != nil && *p.Ephemeral
	meta := threadMeta{
		createdAt: now, updatedAt: now, cwd: st.cwd, model: st.model, provider: st.provider.ID, effort: st.effort,
		ephemeral: ephemeral, originator: c.ClientInfo().Name,
	}
	var rec *rollout.Recorder
	if !ephemeral {
		threadSource := ""
		if p.ThreadSource != nil {
			threadSource = *p.ThreadSource
		}
		rec, err = a.store.Create(rollout.SessionMeta{
			ID: id, CreatedAt: now, Cwd: st.cwd, ModelProvider: st.provider.ID, Model: st.model, Effort: st.effort,
			Source: string(sessionSource), ThreadSource: threadSource, Originator: meta.originator, CLIVersion: Version,
			BaseInstructions: st.baseInstructions, DeveloperInstructions: st.developerInstructions,
		})
		if err != nil {
			return nil, err
		}
		meta.path = rec.Path()
	}
	t, err := a.load(id, st, tools, rec, meta, nil, protocol.StatusIdle())
	if err != nil {
		return nil, err
	}
	t.rawEvents = p.ExperimentalRawEvents
	if persist, _ := p.Config[persistOnStartKey].(bool); persist && rec != nil {
		// Asked for: the rollout exists from now on, so the thread can be
		// resumed (even by another process) before its first turn.
		if err := rec.Persist(ctx); err != nil {
			a.threads.remove(t)
			t.shutdown(ctx)
			return nil, err
		}
	}
	t.subscribe(c)
	wire := t.wire(false)
	c.AfterResponse(ctx, func() {
		c.Notify("thread/started", protocol.ThreadStartedNotification{Thread: wire})
	})
	return a.startResponse(wire, st), nil
}

// load creates the core session of a thread and registers it.
func (a *app) load(id string, st threadSettings, tools []core.DynamicToolSpec, rec *rollout.Recorder, meta threadMeta, history []modelItem, status protocol.ThreadStatus) (*thread, error) {
	cfg, err := a.newSessionConfig(id, st.provider)
	if err != nil {
		return nil, err
	}
	cfg.Model = st.model
	cfg.ContextWindow = contextWindow(st.model)
	cfg.Cwd = st.cwd
	cfg.ApprovalPolicy = st.approval
	cfg.Sandbox = st.sandbox
	cfg.Effort = st.effort
	cfg.Summary = st.summary
	cfg.BaseInstructions = st.baseInstructions
	cfg.DeveloperInstructions = st.developerInstructions
	cfg.DynamicTools = tools
	cfg.Originator = meta.originator
	cfg.History = history
	if rec != nil {
		cfg.Sink = rolloutSink{rec}
	}
	sess, err := core.NewSession(cfg)
	if err != nil {
		return nil, protocol.InvalidRequest("%v", err)
	}
	t := newThread(a, id, sess, rec, meta, status)
	a.threads.add(t)
	return t, nil
}

// dynamicTools maps the client's tool declarations and validates them.
func dynamicTools(specs []protocol.DynamicToolSpec) ([]core.DynamicToolSpec, error) {
	var out []core.DynamicToolSpec
	add := func(ns string, f *protocol.DynamicFunctionTool) error {
		schema, err := jsonRaw(f.InputSchema)
		if err != nil {
			return protocol.InvalidRequest("Invalid request: dynamicTools: tool %q: %v", f.Name, err)
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
		return nil, protocol.InvalidRequest("Invalid request: %v", err)
	}
	return out, nil
}

// startResponse is the result of thread/start and thread/fork.
func (a *app) startResponse(th protocol.Thread, st threadSettings) protocol.ThreadStartResponse {
	var effort *protocol.ReasoningEffort
	if st.effort != "" {
		e := protocol.ReasoningEffort(st.effort)
		effort = &e
	}
	return protocol.ThreadStartResponse{
		Thread:                th,
		Model:                 st.model,
		ModelProvider:         st.provider.ID,
		DisabledPluginIDs:     protocol.List[string]{},
		Cwd:                   protocol.AbsPath(st.cwd),
		RuntimeWorkspaceRoots: protocol.List[protocol.AbsPath]{protocol.AbsPath(st.cwd)},
		InstructionSources:    protocol.List[string]{},
		ApprovalPolicy:        approvalToWire(st.approval),
		ApprovalsReviewer:     protocol.ReviewerUser,
		Sandbox:               sandboxToWire(st.sandbox),
		ReasoningEffort:       effort,
		MultiAgentMode:        protocol.MultiAgentMode{Mode: protocol.MultiAgentExplicitRequestOnly},
	}
}

// wire returns the thread as the protocol shows it; turns are filled by
// the caller when asked for.
func (t *thread) wire(inList bool) protocol.Thread {
	t.mu.Lock()
	m := t.meta
	status := t.proj.Status()
	t.mu.Unlock()
	th := wireThread(t.id, m, status)
	th.Environments = []protocol.ThreadEnvironment{{EnvironmentID: "local", Cwd: m.cwd, RuntimeWorkspaceRoots: protocol.List[string]{m.cwd}}}
	if !inList {
		yes := true
		th.CanAcceptDirectInput = &yes
	}
	return th
}

// wireThread builds a protocol Thread from metadata.
func wireThread(id string, m threadMeta, status protocol.ThreadStatus) protocol.Thread {
	created, updated := m.createdAt.Unix(), m.updatedAt.Unix()
	recency := updated
	th := protocol.Thread{
		ID:            id,
		SessionID:     id,
		ForkedFromID:  optString(m.forkedFrom),
		Preview:       m.preview,
		Ephemeral:     m.ephemeral,
		HistoryMode:   protocol.HistoryPaginated,
		ModelProvider: m.provider,
		Model:         optString(m.model),
		CreatedAt:     created,
		UpdatedAt:     updated,
		RecencyAt:     &recency,
		Status:        status,
		Path:          optString(m.path),
		Cwd:           protocol.AbsPath(m.cwd),
		CliVersion:    Version,
		Originator:    optString(m.originator),
		Source:        protocol.SessionSource{Kind: sessionSource},
		Name:          optString(m.name),
		Turns:         protocol.List[protocol.Turn]{},
	}
	if m.effort != "" {
		e := protocol.ReasoningEffort(m.effort)
		th.ReasoningEffort = &e
	}
	if g := m.gitInfo; g != nil {
		th.GitInfo = &protocol.GitInfo{Sha: optString(g.SHA), Branch: optString(g.Branch), OriginURL: optString(g.OriginURL)}
	}
	return th
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (a *app) threadUnsubscribe(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadIDParams)
	t := a.threads.get(p.ThreadID)
	if t == nil {
		return protocol.ThreadUnsubscribeResponse{Status: protocol.UnsubscribeNotLoaded}, nil
	}
	if !t.unsubscribe(c) {
		return protocol.ThreadUnsubscribeResponse{Status: protocol.UnsubscribeNotSubscribed}, nil
	}
	return protocol.ThreadUnsubscribeResponse{Status: protocol.UnsubscribeUnsubscribed}, nil
}

func (a *app) threadLoadedList(ctx context.Context, c *Conn, params any) (any, error) {
	ids := a.threads.ids()
	return protocol.ThreadLoadedListResponse{Data: ids}, nil
}

// loadedThread returns a loaded thread, loading a stored one for c
// (which it subscribes), or the reference's error: an id that is not a
// UUID is "invalid thread id", one with no thread "thread not found".
// Loading on demand means a thread unloaded while a client kept it open
// carries on when that client sends its next turn.
func (a *app) loadedThread(ctx context.Context, c *Conn, id string) (*thread, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, protocol.InvalidRequest("invalid thread id: %v", err)
	}
	if t := a.threads.get(id); t != nil {
		return t, nil
	}
	a.loadMu.Lock()
	defer a.loadMu.Unlock()
	if t := a.threads.get(id); t != nil {
		return t, nil
	}
	t, _, _, err := a.loadStored(ctx, id, overrides{})
	if err != nil {
		var perr *protocol.Error
		if errors.As(err, &perr) {
			return nil, protocol.InvalidRequest("thread not found: %s", id)
		}
		return nil, err
	}
	t.subscribeQuiet(c)
	return t, nil
}

// rejectErr converts a core rejection to a JSON-RPC error with its text.
func rejectErr(err error) error {
	var rej *core.RejectError
	if errors.As(err, &rej) {
		return protocol.InvalidRequest("%s", rej.Message)
	}
	return err
}
