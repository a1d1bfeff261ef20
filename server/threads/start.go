package threads

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/agentd-dev/agentd/server/scope"
)

// persistOnStartKey, in thread/start's config, asks for the rollout file
// to be written at once rather than at the first turn (an agentd
// extension; see docs/protocol.md).
const persistOnStartKey = "persist_on_start"

// sessionSource is what app-server threads report as their source, as the
// reference does.
const sessionSource = protocol.SessionSourceKind("vscode")

func (sv *service) threadStart(ctx context.Context, r *rpc.Request, p *protocol.ThreadStartParams) (*protocol.ThreadStartResponse, error) {
	c := r.Conn()
	if err := validApproval(p.ApprovalPolicy); err != nil {
		return nil, err
	}
	sv.refreshConfig(ctx, c)
	st := sv.defaultSettings(ctx)
	st.projectDefaults = true
	st, err := sv.apply(st, overrides{
		model: p.Model, provider: p.ModelProvider, cwd: p.Cwd, approval: p.ApprovalPolicy, sandbox: p.Sandbox,
		config: p.Config, baseInstructions: p.BaseInstructions, developerInstructions: p.DeveloperInstructions,
		scope: c.Scope(), method: r.Method(), client: c.ClientInfo(),
	})
	if err != nil {
		return nil, err
	}
	tools, err := dynamicTools(p.DynamicTools)
	if err != nil {
		return nil, err
	}
	sv.trustProject(r, p, st)
	if err := sv.requiredMCP(ctx); err != nil {
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
		ephemeral: ephemeral, originator: c.ClientInfo().Originator,
	}
	var rec *rollout.Recorder
	if !ephemeral {
		threadSource := ""
		if p.ThreadSource != nil {
			threadSource = *p.ThreadSource
		}
		rec, err = sv.store.Create(rollout.SessionMeta{
			ID: id, CreatedAt: now, Cwd: st.cwd, ModelProvider: st.provider.ID, Model: st.model, Effort: st.effort,
			Source: string(sessionSource), ThreadSource: threadSource, Originator: meta.originator, CLIVersion: sv.version,
			BaseInstructions: st.baseInstructions, DeveloperInstructions: st.developerInstructions,
		})
		if err != nil {
			return nil, metaErr(r.Method(), err)
		}
		meta.path = rec.Path()
	}
	t, err := sv.load(loadSpec{log: r.Logger(), id: id, settings: st, tools: tools, rec: rec, meta: meta, status: protocol.StatusIdle(), rawEvents: p.ExperimentalRawEvents})
	if err != nil {
		return nil, err
	}
	if persist, _ := p.Config[persistOnStartKey].(bool); persist && rec != nil {
		// Asked for: the rollout exists from now on, so the thread can be
		// resumed (even by another process) before its first turn.
		if err := rec.Persist(ctx); err != nil {
			sv.threads.remove(t)
			t.shutdown(ctx)
			return nil, err
		}
	}
	r.ResponseFirst()
	t.subscribe(c, true)
	wire := t.wire(false)
	r.Then("thread/started", protocol.ThreadStartedNotification{Thread: wire})
	sv.mcpStatusAfterStart(r, id)
	return sv.startResponse(t, wire, st), nil
}

func (sv *service) threadUnsubscribe(_ context.Context, r *rpc.Request, p *protocol.ThreadIDParams) (*protocol.ThreadUnsubscribeResponse, error) {
	c := r.Conn()
	t := sv.threads.get(p.ThreadID)
	if t == nil {
		return &protocol.ThreadUnsubscribeResponse{Status: protocol.UnsubscribeNotLoaded}, nil
	}
	if !t.unsubscribe(c) {
		return &protocol.ThreadUnsubscribeResponse{Status: protocol.UnsubscribeNotSubscribed}, nil
	}
	return &protocol.ThreadUnsubscribeResponse{Status: protocol.UnsubscribeUnsubscribed}, nil
}

// threadLoadedList lists the loaded threads' ids, sorted, a page at a time
// (pageLoadedIDs).
func (sv *service) threadLoadedList(_ context.Context, _ *rpc.Request, p *protocol.ThreadLoadedListParams) (*protocol.ThreadLoadedListResponse, error) {
	return pageLoadedIDs(sv.threads.ids(), p)
}

// trustProject records in config.toml that the git repository holding a
// new thread's cwd is trusted, as the reference does (0.169, observed),
// when thread/start names the cwd, the thread's sandbox (asked for or
// configured) writes, and config.toml rates neither the cwd nor the
// repository. Only for an admin client: the key is protected, since a
// trusted project widens what operate clients may ask for in it
// (docs/security.md). A failure is logged, and the thread starts all the
// same.
func (sv *service) trustProject(r *rpc.Request, p *protocol.ThreadStartParams, st threadSettings) {
	if sv.writeTrust == nil || p.Cwd == nil || !r.Conn().Scope().Allows(scope.Admin) {
		return
	}
	if m := st.sandbox.Mode; m != policy.SandboxWorkspaceWrite && m != policy.SandboxDangerFullAccess {
		return
	}
	if st.cfg.ProjectTrust(st.cwd) != "" {
		return
	}
	root := config.TrustRoot(st.cwd)
	if root == "" {
		return
	}
	if err := sv.writeTrust(r, root); err != nil {
		// Once per project: a read-only home (a hardened service) would
		// otherwise warn at every thread/start.
		level := zap.DebugLevel
		if _, seen := sv.trustFailed.LoadOrStore(root, true); !seen {
			level = zap.WarnLevel
		}
		r.Logger().Log(level, "could not record the project's trust in config.toml", zap.String("project", root), zap.Error(err))
		return
	}
	r.Logger().Info("project trust recorded in config.toml", zap.String("project", root))
}
