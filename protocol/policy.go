package protocol

// AskForApproval says when the agent asks before acting: a plain mode or,
// for experimental clients, {"granular": {...}}.
type AskForApproval struct {
	Mode     ApprovalMode      `key:"*"`
	Granular *GranularApproval `key:"granular" wire:"gated"`
}

// ApprovalPolicy returns an AskForApproval with a plain mode.
func ApprovalPolicy(m ApprovalMode) AskForApproval { return AskForApproval{Mode: m} }

// MarshalJSON encodes the union (see union.go).
func (a AskForApproval) MarshalJSON() ([]byte, error) { return marshalUnion(&a) }

// UnmarshalJSON decodes the union (see union.go).
func (a *AskForApproval) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, a) }

// ApprovalMode is a plain AskForApproval value.
type ApprovalMode string

// Approval modes.
const (
	ApprovalUntrusted ApprovalMode = "untrusted"
	ApprovalOnRequest ApprovalMode = "on-request"
	ApprovalNever     ApprovalMode = "never"
)

func (ApprovalMode) wireValues() []string {
	return values(ApprovalUntrusted, ApprovalOnRequest, ApprovalNever)
}

// GranularApproval chooses, per kind of request, whether to ask (snake_case keys).
type GranularApproval struct {
	SandboxApproval    bool `json:"sandbox_approval"`
	Rules              bool `json:"rules"`
	McpElicitations    bool `json:"mcp_elicitations"`
	RequestPermissions bool `json:"request_permissions,omitempty"`
	SkillApproval      bool `json:"skill_approval,omitempty"`
}

// ApprovalsReviewer says who reviews approval requests.
type ApprovalsReviewer string

// Approval reviewers.
const (
	ReviewerUser             ApprovalsReviewer = "user"
	ReviewerAutoReview       ApprovalsReviewer = "auto_review"
	ReviewerGuardianSubagent ApprovalsReviewer = "guardian_subagent"
)

func (ApprovalsReviewer) wireValues() []string {
	return values(ReviewerUser, ReviewerAutoReview, ReviewerGuardianSubagent)
}

// SandboxMode is the thread-level sandbox setting (kebab-case on the wire).
type SandboxMode string

// Sandbox modes.
const (
	SandboxReadOnly         SandboxMode = "read-only"
	SandboxWorkspaceWrite   SandboxMode = "workspace-write"
	SandboxDangerFullAccess SandboxMode = "danger-full-access"
)

func (SandboxMode) wireValues() []string {
	return values(SandboxReadOnly, SandboxWorkspaceWrite, SandboxDangerFullAccess)
}

// SandboxPolicy is the effective sandbox of a turn, tagged by "type" (camelCase).
type SandboxPolicy struct {
	DangerFullAccess *Empty                 `variant:"dangerFullAccess"`
	ReadOnly         *ReadOnlySandbox       `variant:"readOnly"`
	ExternalSandbox  *ExternalSandbox       `variant:"externalSandbox"`
	WorkspaceWrite   *WorkspaceWriteSandbox `variant:"workspaceWrite"`
}

// MarshalJSON encodes the union (see union.go).
func (p SandboxPolicy) MarshalJSON() ([]byte, error) { return marshalUnion(&p) }

// UnmarshalJSON decodes the union (see union.go).
func (p *SandboxPolicy) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, p) }

// ReadOnlySandbox is the readOnly SandboxPolicy.
type ReadOnlySandbox struct {
	NetworkAccess bool `json:"networkAccess" wire:"optional"`
}

// ExternalSandbox is the externalSandbox SandboxPolicy: something outside
// agentd sandboxes commands.
type ExternalSandbox struct {
	NetworkAccess *NetworkAccess `json:"networkAccess,omitempty"`
}

// WorkspaceWriteSandbox is the workspaceWrite SandboxPolicy.
type WorkspaceWriteSandbox struct {
	WritableRoots       List[AbsPath] `json:"writableRoots" wire:"optional"`
	NetworkAccess       bool          `json:"networkAccess" wire:"optional"`
	ExcludeTmpdirEnvVar bool          `json:"excludeTmpdirEnvVar" wire:"optional"`
	ExcludeSlashTmp     bool          `json:"excludeSlashTmp" wire:"optional"`
}

// NetworkAccess is the network setting of an external sandbox.
type NetworkAccess string

// Network access settings.
const (
	NetworkRestricted NetworkAccess = "restricted"
	NetworkEnabled    NetworkAccess = "enabled"
)

func (NetworkAccess) wireValues() []string { return values(NetworkRestricted, NetworkEnabled) }

// Personality is a deprecated style preset.
type Personality string

// Personalities.
const (
	PersonalityNone      Personality = "none"
	PersonalityFriendly  Personality = "friendly"
	PersonalityPragmatic Personality = "pragmatic"
)

func (Personality) wireValues() []string {
	return values(PersonalityNone, PersonalityFriendly, PersonalityPragmatic)
}

// ReasoningEffort is a model's reasoning effort ("low", "medium", "high", …);
// the set depends on the model.
type ReasoningEffort string

// ReasoningSummary selects reasoning summaries.
type ReasoningSummary string

// Reasoning summary settings.
const (
	SummaryAuto     ReasoningSummary = "auto"
	SummaryConcise  ReasoningSummary = "concise"
	SummaryDetailed ReasoningSummary = "detailed"
	SummaryNone     ReasoningSummary = "none"
)

func (ReasoningSummary) wireValues() []string {
	return values(SummaryAuto, SummaryConcise, SummaryDetailed, SummaryNone)
}

// MultiAgentMode controls multi-agent delegation: a preset or {"custom": hint}.
type MultiAgentMode struct {
	Mode   MultiAgentPreset `key:"*"`
	Custom *string          `key:"custom"`
}

// MarshalJSON encodes the union (see union.go).
func (m MultiAgentMode) MarshalJSON() ([]byte, error) { return marshalUnion(&m) }

// UnmarshalJSON decodes the union (see union.go).
func (m *MultiAgentMode) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, m) }

// MultiAgentPreset is a plain MultiAgentMode value.
type MultiAgentPreset string

// Multi-agent presets.
const (
	MultiAgentExplicitRequestOnly MultiAgentPreset = "explicitRequestOnly"
	MultiAgentProactive           MultiAgentPreset = "proactive"
)

func (MultiAgentPreset) wireValues() []string {
	return values(MultiAgentExplicitRequestOnly, MultiAgentProactive)
}

// ActivePermissionProfile names the permission profile in force.
type ActivePermissionProfile struct {
	ID      string  `json:"id"`
	Extends *string `json:"extends"`
}

// CollaborationMode is a turn's collaboration mode (settings keys are snake_case).
type CollaborationMode struct {
	Mode     ModeKind              `json:"mode"`
	Settings CollaborationSettings `json:"settings"`
}

// CollaborationSettings are the settings of a CollaborationMode.
type CollaborationSettings struct {
	Model                 string           `json:"model"`
	ReasoningEffort       *ReasoningEffort `json:"reasoning_effort"`
	DeveloperInstructions *string          `json:"developer_instructions"`
}

// ModeKind is a collaboration mode.
type ModeKind string

// Collaboration modes.
const (
	ModePlan    ModeKind = "plan"
	ModeDefault ModeKind = "default"
)

func (ModeKind) wireValues() []string { return values(ModePlan, ModeDefault) }
