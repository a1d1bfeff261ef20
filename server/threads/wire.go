package threads

import (
	"strings"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
)

// hydrationNotice is sent before a result that carries every turn, as
// the reference does for paginated threads.
const hydrationNotice = "Full-history hydration is deprecated for paginated threads; use `excludeTurns: true`, then page with `thread/turns/list` and `thread/items/list`."

// wireTurns maps rebuilt turns with the given items view.
func wireTurns(turns []rollout.Turn, view protocol.TurnItemsView) protocol.List[protocol.Turn] {
	out := make(protocol.List[protocol.Turn], 0, len(turns))
	for _, rt := range turns {
		out = append(out, wireTurn(rt, view))
	}
	return out
}

func wireTurn(rt rollout.Turn, view protocol.TurnItemsView) protocol.Turn {
	id := rt.ID
	t := protocol.Turn{ID: id, RootTurnID: &id, Items: protocol.List[protocol.ThreadItem]{}, ItemsView: view, Status: protocol.TurnStatus(rt.Status)}
	if rt.Error != nil {
		e := projection.TurnError(*rt.Error)
		t.Error = &e
	}
	if !rt.StartedAt.IsZero() {
		s := rt.StartedAt.Unix()
		t.StartedAt = &s
	}
	if !rt.CompletedAt.IsZero() {
		c := rt.CompletedAt.Unix()
		d := rt.Duration.Milliseconds()
		t.CompletedAt, t.DurationMs = &c, &d
	}
	switch view {
	case protocol.ItemsFull:
		for i, it := range rt.Items {
			t.Items = append(t.Items, wireItem(it, rt.ItemTimes, i))
		}
	case protocol.ItemsSummary:
		last := -1
		for i, it := range rt.Items {
			if _, ok := it.(core.AgentMessageItem); ok {
				last = i
			}
		}
		for i, it := range rt.Items {
			if _, ok := it.(core.UserMessageItem); ok || i == last {
				t.Items = append(t.Items, wireItem(it, rt.ItemTimes, i))
			}
		}
	}
	return t
}

func wireItem(it core.TurnItem, times []rollout.ItemTimes, i int) protocol.ThreadItem {
	var s, c int64
	if i < len(times) {
		if !times[i].StartedAt.IsZero() {
			s = times[i].StartedAt.UnixMilli()
		}
		if !times[i].CompletedAt.IsZero() {
			c = times[i].CompletedAt.UnixMilli()
		}
	}
	return projection.Item(it, s, c)
}

// metaOf is the thread metadata of a rebuilt thread.
func metaOf(rt *rollout.Thread) threadMeta {
	m := threadMeta{
		createdAt: rt.CreatedAt, updatedAt: rt.UpdatedAt, cwd: rt.Meta.Cwd, model: rt.Meta.Model,
		provider: rt.Meta.ModelProvider, effort: rt.Meta.Effort, name: rt.Name, preview: rt.Preview,
		path: rt.Path, originator: rt.Meta.Originator, forkedFrom: rt.Meta.ForkedFromID, gitInfo: rt.Meta.Git,
		cliVersion: rt.Meta.CLIVersion, source: rt.Meta.Source,
	}
	if tc := rt.TurnContext; tc != nil {
		m.cwd, m.model, m.effort = tc.Cwd, tc.Model, tc.Effort
	}
	return m
}

// startResponse is the result of thread/start and thread/fork for t.
func (sv *service) startResponse(t *thread, th protocol.Thread, st threadSettings) *protocol.ThreadStartResponse {
	var effort *protocol.ReasoningEffort
	if st.effort != "" {
		e := protocol.ReasoningEffort(st.effort)
		effort = &e
	}
	return &protocol.ThreadStartResponse{
		Thread:                th,
		Model:                 st.model,
		ModelProvider:         st.provider.ID,
		DisabledPluginIDs:     protocol.List[string]{},
		Cwd:                   protocol.AbsPath(st.cwd),
		RuntimeWorkspaceRoots: protocol.List[protocol.AbsPath]{protocol.AbsPath(st.cwd)},
		InstructionSources:    protocol.List[string](append([]string{}, t.instructionSources...)),
		ApprovalPolicy:        projection.ApprovalPolicy(st.approval),
		ApprovalsReviewer:     protocol.ReviewerUser,
		Sandbox:               projection.SandboxPolicy(st.sandbox),
		ReasoningEffort:       effort,
		MultiAgentMode:        protocol.MultiAgentMode{Mode: protocol.MultiAgentExplicitRequestOnly},
	}
}

func (sv *service) resumeResponse(t *thread, th protocol.Thread, st threadSettings) *protocol.ThreadResumeResponse {
	s := sv.startResponse(t, th, st)
	return &protocol.ThreadResumeResponse{
		Thread: s.Thread, Model: s.Model, ModelProvider: s.ModelProvider, ServiceTier: s.ServiceTier,
		DisabledPluginIDs: s.DisabledPluginIDs, Cwd: s.Cwd, RuntimeWorkspaceRoots: s.RuntimeWorkspaceRoots,
		InstructionSources: s.InstructionSources, ApprovalPolicy: s.ApprovalPolicy, ApprovalsReviewer: s.ApprovalsReviewer,
		Sandbox: s.Sandbox, ReasoningEffort: s.ReasoningEffort, MultiAgentMode: s.MultiAgentMode,
		CollaborationMode: wireMode(t.sess.TurnContext()),
	}
}

// wire returns the thread as the protocol shows it; turns are filled by
// the caller when asked for.
func (t *thread) wire(inList bool) protocol.Thread {
	t.mu.Lock()
	m := t.meta
	status := t.proj.Status()
	t.mu.Unlock()
	th := t.sv.wireThread(t.id, m, status)
	th.Environments = []protocol.ThreadEnvironment{{EnvironmentID: "local", Cwd: m.cwd, RuntimeWorkspaceRoots: protocol.List[string]{m.cwd}}}
	if !inList {
		yes := true
		th.CanAcceptDirectInput = &yes
	}
	return th
}

// wireThread builds a protocol Thread from metadata.
func (sv *service) wireThread(id string, m threadMeta, status protocol.ThreadStatus) protocol.Thread {
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
		CliVersion:    sv.version,
		Originator:    optString(m.originator),
		Source:        wireSource(m.source),
		Name:          optString(m.name),
		Turns:         protocol.List[protocol.Turn]{},
	}
	if m.cliVersion != "" {
		th.CliVersion = m.cliVersion
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

// wireSource is a stored source kind (thread/list's sourceKinds names) as
// the protocol shows it; "" is this server's own.
func wireSource(kind string) protocol.SessionSource {
	sub, isSub := strings.CutPrefix(kind, "subAgent")
	switch {
	case kind == "":
		return protocol.SessionSource{Kind: sessionSource}
	case !isSub:
		return protocol.SessionSource{Kind: protocol.SessionSourceKind(kind)}
	}
	switch k := protocol.SubAgentKind(rollout.SnakeCase(sub)); k {
	case protocol.SubAgentReview, protocol.SubAgentCompact, protocol.SubAgentMemoryConsolidation:
		return protocol.SessionSource{SubAgent: &protocol.SubAgentSource{Kind: k}}
	default:
		other := string(k)
		return protocol.SessionSource{SubAgent: &protocol.SubAgentSource{Other: &other}}
	}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
