package rollout

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
)

// FormatVersion is written in every session_meta record agentd writes
// (agentd_format). Format 1 was agentd's own camelCase schema; format 2 is
// the reference's schema. Readers accept both, and files without the field
// (the reference's).
const FormatVersion = 2

// SessionMeta is the first record of a rollout: who the thread is and how
// it was started. It never changes after it is written.
type SessionMeta struct {
	ID        string
	CreatedAt time.Time
	Cwd       string
	// ModelProvider and Model are the settings at creation; later turns
	// may change them (see TurnContext).
	ModelProvider string
	Model         string
	Effort        string
	// Source is the session source kind ("vscode", "cli", "exec",
	// "appServer", "subAgentReview", …), as thread/list's sourceKinds
	// filter names them.
	Source string
	// HistoryMode is the reference's history_mode ("paginated" for the
	// threads it writes in its newer layout); "" for agentd's threads.
	HistoryMode string
	// ThreadSource is the client's free-form threadSource, if any.
	ThreadSource string
	// Originator is the client name that created the thread.
	Originator string
	// CLIVersion is the agentd version that created the thread.
	CLIVersion   string
	Git          *GitInfo
	ForkedFromID string
	// BaseInstructions and DeveloperInstructions are set only when the
	// client overrode them at creation.
	BaseInstructions      string
	DeveloperInstructions string
}

// GitInfo describes the git repository the thread's cwd is in. Empty
// fields are unknown.
type GitInfo struct {
	SHA       string
	Branch    string
	OriginURL string
}

// TurnContext is the settings a turn ran with.
type TurnContext struct {
	Cwd            string
	Model          string
	Effort         string
	Summary        string
	ApprovalPolicy policy.ApprovalPolicy
	Sandbox        policy.SandboxPolicy
	// Mode is the turn's collaboration mode (the zero value when the
	// client never chose one).
	Mode core.CollaborationMode
}

// Compaction replaces the model history: after it, the history is
// ReplacementHistory followed by whatever is recorded later.
type Compaction struct {
	// Message is the summary text, for people reading the file.
	Message            string
	ReplacementHistory []model.ResponseItem
}

// wireMeta is the session_meta payload: the reference's fields, agentd's
// own (agentd_*), and, for reading, format 1's camelCase fields.
type wireMeta struct {
	ID          string          `json:"id"`
	Timestamp   string          `json:"timestamp,omitempty"`
	Cwd         string          `json:"cwd"`
	Originator  string          `json:"originator"`
	CLIVersion  string          `json:"cli_version"`
	Source      json.RawMessage `json:"source,omitempty"`
	Provider    string          `json:"model_provider,omitempty"`
	BaseInstr   json.RawMessage `json:"base_instructions,omitempty"`
	Git         *wireGitRef     `json:"git,omitempty"`
	ForkedFrom  string          `json:"forked_from_id,omitempty"`
	HistoryMode string          `json:"history_mode,omitempty"`

	AgentdFormat       int    `json:"agentd_format,omitempty"`
	AgentdModel        string `json:"agentd_model,omitempty"`
	AgentdEffort       string `json:"agentd_reasoning_effort,omitempty"`
	AgentdThreadSource string `json:"agentd_thread_source,omitempty"`
	AgentdDevInstr     string `json:"agentd_developer_instructions,omitempty"`
}

type wireText struct {
	Text string `json:"text"`
}

// textOf reads base_instructions: {"text": …}, or a plain string as older
// writers gave it.
func textOf(raw json.RawMessage) string {
	var w wireText
	if json.Unmarshal(raw, &w) == nil {
		return w.Text
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

type wireGitRef struct {
	CommitHash    string `json:"commit_hash,omitempty"`
	Branch        string `json:"branch,omitempty"`
	RepositoryURL string `json:"repository_url,omitempty"`
}

// wireMetaV1 is format 1's session_meta.
type wireMetaV1 struct {
	CreatedAt             time.Time `json:"createdAt"`
	ModelProvider         string    `json:"modelProvider"`
	Model                 string    `json:"model"`
	Effort                string    `json:"reasoningEffort"`
	Source                string    `json:"source"`
	ThreadSource          string    `json:"threadSource"`
	CLIVersion            string    `json:"cliVersion"`
	Git                   *wireGit  `json:"git"`
	ForkedFromID          string    `json:"forkedFromId"`
	BaseInstructions      string    `json:"baseInstructions"`
	DeveloperInstructions string    `json:"developerInstructions"`
	Format                int       `json:"format"`
}

type wireGit struct {
	SHA       string `json:"sha,omitempty"`
	Branch    string `json:"branch,omitempty"`
	OriginURL string `json:"originUrl,omitempty"`
}

// sourceToRef spells a session source the reference's way: a plain kind,
// or {"subagent": kind} for a sub-agent.
func sourceToRef(s string) json.RawMessage {
	var v any = s
	switch {
	case s == "" || s == "unknown":
		v = "unknown"
	case s == "appServer":
		v = "mcp"
	case strings.HasPrefix(s, "subAgent"):
		kind := SnakeCase(strings.TrimPrefix(s, "subAgent"))
		if kind == "" {
			kind = "other"
		}
		v = map[string]string{"subagent": kind}
	}
	b, _ := json.Marshal(v)
	return b
}

// sourceFromRef undoes sourceToRef; an object it does not know is a
// sub-agent of another kind.
func sourceFromRef(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "mcp" {
			return "appServer"
		}
		return s
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var kind string
	if json.Unmarshal(m["subagent"], &kind) != nil {
		// A sub-agent kind with details: {"thread_spawn": {…}}.
		var detailed map[string]json.RawMessage
		_ = json.Unmarshal(m["subagent"], &detailed)
		for k := range detailed {
			kind = k
		}
	}
	if kind == "" {
		return "subAgentOther"
	}
	c := camelCase(kind)
	return "subAgent" + strings.ToUpper(c[:1]) + c[1:]
}

func metaToWire(m SessionMeta) wireMeta {
	w := wireMeta{
		ID: m.ID, Timestamp: m.CreatedAt.UTC().Format(timestampLayout), Cwd: m.Cwd, Originator: m.Originator,
		CLIVersion: m.CLIVersion, Source: sourceToRef(m.Source), Provider: m.ModelProvider, ForkedFrom: m.ForkedFromID,
		AgentdFormat: FormatVersion, AgentdModel: m.Model, AgentdEffort: m.Effort, AgentdThreadSource: m.ThreadSource,
		AgentdDevInstr: m.DeveloperInstructions,
	}
	if m.BaseInstructions != "" {
		w.BaseInstr, _ = json.Marshal(wireText{Text: m.BaseInstructions})
	}
	if m.Git != nil {
		w.Git = &wireGitRef{CommitHash: m.Git.SHA, Branch: m.Git.Branch, RepositoryURL: m.Git.OriginURL}
	}
	return w
}

// decodeMeta reads a session_meta payload of either format.
func decodeMeta(b []byte) (SessionMeta, error) {
	var w wireMeta
	if err := json.Unmarshal(b, &w); err != nil {
		return SessionMeta{}, err
	}
	m := SessionMeta{
		ID: w.ID, Cwd: w.Cwd, ModelProvider: w.Provider, Model: w.AgentdModel, Effort: w.AgentdEffort,
		Source: sourceFromRef(w.Source), ThreadSource: w.AgentdThreadSource, Originator: w.Originator,
		CLIVersion: w.CLIVersion, ForkedFromID: w.ForkedFrom, DeveloperInstructions: w.AgentdDevInstr,
		HistoryMode: w.HistoryMode,
	}
	if len(w.BaseInstr) > 0 {
		m.BaseInstructions = textOf(w.BaseInstr)
	}
	if w.Git != nil {
		m.Git = &GitInfo{SHA: w.Git.CommitHash, Branch: w.Git.Branch, OriginURL: w.Git.RepositoryURL}
	}
	if t, err := time.Parse(time.RFC3339Nano, w.Timestamp); err == nil {
		m.CreatedAt = t
	}
	if w.Timestamp == "" && w.CLIVersion == "" {
		// Format 1: camelCase.
		var v1 wireMetaV1
		if err := json.Unmarshal(b, &v1); err != nil {
			return SessionMeta{}, err
		}
		m.CreatedAt, m.ModelProvider, m.Model, m.Effort = v1.CreatedAt, v1.ModelProvider, v1.Model, v1.Effort
		m.Source, m.ThreadSource, m.CLIVersion, m.ForkedFromID = v1.Source, v1.ThreadSource, v1.CLIVersion, v1.ForkedFromID
		m.BaseInstructions, m.DeveloperInstructions = v1.BaseInstructions, v1.DeveloperInstructions
		if v1.Git != nil {
			m.Git = &GitInfo{SHA: v1.Git.SHA, Branch: v1.Git.Branch, OriginURL: v1.Git.OriginURL}
		}
	}
	return m, nil
}

// wireTurnContext is the turn_context payload: the reference's fields and,
// for reading, format 1's camelCase ones.
type wireTurnContext struct {
	TurnID string `json:"turn_id,omitempty"`
	Cwd    string `json:"cwd"`
	// ApprovalPolicy is a name; the reference also has an object form
	// (granular), which agentd does not have and reads as none.
	ApprovalPolicy json.RawMessage `json:"approval_policy,omitempty"`
	SandboxPolicy  *wireSandboxRef `json:"sandbox_policy,omitempty"`
	Model          string          `json:"model"`
	Effort         string          `json:"effort,omitempty"`
	Summary        string          `json:"summary,omitempty"`
	V1Approval     string          `json:"approvalPolicy,omitempty"`
	V1Sandbox      *wireSandboxV1  `json:"sandbox,omitempty"`
	Mode           *wireMode       `json:"collaboration_mode,omitempty"`
}

// wireMode is the reference's collaboration_mode of a turn_context. Its
// developer_instructions are the text the model was given; agentd marks
// the client's own (agentd_custom_instructions), so that agentd's text is
// not taken for a client's when it is read back.
type wireMode struct {
	Mode     string `json:"mode"`
	Settings struct {
		Model                 string  `json:"model"`
		ReasoningEffort       *string `json:"reasoning_effort"`
		DeveloperInstructions *string `json:"developer_instructions"`
	} `json:"settings"`
	AgentdCustomInstructions bool `json:"agentd_custom_instructions,omitempty"`
}

// modeToWire is the record of mode m for a turn running model and
// effort; nil for a mode the client never chose (none is written then).
func modeToWire(m core.CollaborationMode, model, effort string) *wireMode {
	if m.Kind == "" {
		return nil
	}
	w := &wireMode{Mode: string(m.Kind), AgentdCustomInstructions: m.Instructions != ""}
	w.Settings.Model = model
	if effort != "" {
		w.Settings.ReasoningEffort = &effort
	}
	if text := m.Text(); text != "" {
		w.Settings.DeveloperInstructions = &text
	}
	return w
}

// mode reads a recorded mode. The reference records a default mode with
// no instructions for every turn; that is a mode nobody chose. Its other
// instructions are its own text for the mode, which agentd replaces with
// its own.
func (w *wireMode) mode() core.CollaborationMode {
	if w == nil {
		return core.CollaborationMode{}
	}
	k := core.ModeKind(w.Mode)
	if k != core.ModePlan && k != core.ModeDefault {
		return core.CollaborationMode{}
	}
	instr := w.Settings.DeveloperInstructions
	if k == core.ModeDefault && instr == nil {
		return core.CollaborationMode{}
	}
	m := core.CollaborationMode{Kind: k}
	if w.AgentdCustomInstructions && instr != nil {
		m.Instructions = *instr
	}
	return m
}

// wireSandboxRef is the reference's sandbox policy, tagged by "type".
// network_access is a boolean for workspace-write and "enabled" or
// "restricted" for external-sandbox.
type wireSandboxRef struct {
	Type                string          `json:"type"`
	WritableRoots       []string        `json:"writable_roots,omitempty"`
	NetworkAccess       json.RawMessage `json:"network_access,omitempty"`
	ExcludeTmpdirEnvVar bool            `json:"exclude_tmpdir_env_var,omitempty"`
	ExcludeSlashTmp     bool            `json:"exclude_slash_tmp,omitempty"`
}

type wireSandboxV1 struct {
	Mode                string   `json:"mode"`
	WritableRoots       []string `json:"writableRoots,omitempty"`
	NetworkAccess       bool     `json:"networkAccess,omitempty"`
	ExcludeTmpdirEnvVar bool     `json:"excludeTmpdirEnvVar,omitempty"`
	ExcludeSlashTmp     bool     `json:"excludeSlashTmp,omitempty"`
}

func turnContextToWire(turnID string, tc TurnContext) wireTurnContext {
	sb := &wireSandboxRef{Type: string(tc.Sandbox.Mode), ExcludeTmpdirEnvVar: tc.Sandbox.ExcludeTmpdirEnvVar, ExcludeSlashTmp: tc.Sandbox.ExcludeSlashTmp}
	switch tc.Sandbox.Mode {
	case policy.SandboxWorkspaceWrite:
		sb.WritableRoots = tc.Sandbox.WritableRoots
		sb.NetworkAccess, _ = json.Marshal(tc.Sandbox.NetworkAccess)
	case policy.SandboxExternal:
		na := "restricted"
		if tc.Sandbox.NetworkAccess {
			na = "enabled"
		}
		sb.NetworkAccess, _ = json.Marshal(na)
	}
	if sb.Type == "" {
		sb = nil
	}
	w := wireTurnContext{TurnID: turnID, Cwd: tc.Cwd, SandboxPolicy: sb, Model: tc.Model, Effort: tc.Effort, Summary: tc.Summary,
		Mode: modeToWire(tc.Mode, tc.Model, tc.Effort)}
	if tc.ApprovalPolicy != "" {
		w.ApprovalPolicy, _ = json.Marshal(tc.ApprovalPolicy)
	}
	return w
}

func (w wireTurnContext) turnContext() TurnContext {
	tc := TurnContext{Cwd: w.Cwd, Model: w.Model, Effort: w.Effort, Summary: w.Summary, Mode: w.Mode.mode()}
	var approval string
	if json.Unmarshal(w.ApprovalPolicy, &approval) == nil {
		tc.ApprovalPolicy = policy.ApprovalPolicy(approval)
	}
	if w.V1Approval != "" {
		tc.ApprovalPolicy = policy.ApprovalPolicy(w.V1Approval)
	}
	if s := w.SandboxPolicy; s != nil {
		tc.Sandbox = policy.SandboxPolicy{
			Mode: policy.SandboxMode(s.Type), WritableRoots: s.WritableRoots,
			ExcludeTmpdirEnvVar: s.ExcludeTmpdirEnvVar, ExcludeSlashTmp: s.ExcludeSlashTmp,
		}
		var on bool
		var kind string
		if json.Unmarshal(s.NetworkAccess, &on) == nil {
			tc.Sandbox.NetworkAccess = on
		} else if json.Unmarshal(s.NetworkAccess, &kind) == nil {
			tc.Sandbox.NetworkAccess = kind == "enabled"
		}
	}
	if s := w.V1Sandbox; s != nil {
		tc.Sandbox = policy.SandboxPolicy{
			Mode: policy.SandboxMode(s.Mode), WritableRoots: s.WritableRoots, NetworkAccess: s.NetworkAccess,
			ExcludeTmpdirEnvVar: s.ExcludeTmpdirEnvVar, ExcludeSlashTmp: s.ExcludeSlashTmp,
		}
	}
	return tc
}

// wireThreadName is format 1's thread_name record.
type wireThreadName struct {
	Name string `json:"name"`
}

// wireRollback is format 1's rollback record.
type wireRollback struct {
	NumTurns int `json:"numTurns"`
}

// wireCompacted is the compacted payload; format 1 spelled the history
// replacementHistory.
type wireCompacted struct {
	Message            string               `json:"message"`
	ReplacementHistory []model.ResponseItem `json:"replacement_history"`
	V1History          []model.ResponseItem `json:"replacementHistory,omitempty"`
}

func (w *wireCompacted) compaction() Compaction {
	h := w.ReplacementHistory
	if h == nil {
		h = w.V1History
	}
	return Compaction{Message: w.Message, ReplacementHistory: h}
}
