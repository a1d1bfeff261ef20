package protocol

// Thread is a conversation. Every field is always written, nulls included
// (clients rely on the full key set).
type Thread struct {
	ID                   string              `json:"id"`
	Environments         []ThreadEnvironment `json:"environments" wire:"optional,experimental"`
	Extra                map[string]any      `json:"extra" wire:"optional,experimental"`
	SessionID            string              `json:"sessionId"`
	ForkedFromID         *string             `json:"forkedFromId"`
	AttachedToThreadID   *string             `json:"attachedToThreadId" wire:"experimental"`
	ParentThreadID       *string             `json:"parentThreadId"`
	Preview              string              `json:"preview"`
	Ephemeral            bool                `json:"ephemeral"`
	Section              *ThreadSection      `json:"section"`
	SectionEnteredAt     *int64              `json:"sectionEnteredAt"`
	ProjectID            *string             `json:"projectId" wire:"required"`
	HistoryMode          ThreadHistoryMode   `json:"historyMode" wire:"optional"`
	ModelProvider        string              `json:"modelProvider"`
	Model                *string             `json:"model"`
	ReasoningEffort      *ReasoningEffort    `json:"reasoningEffort"`
	CreatedAt            int64               `json:"createdAt"`
	UpdatedAt            int64               `json:"updatedAt"`
	RecencyAt            *int64              `json:"recencyAt"`
	Status               ThreadStatus        `json:"status"`
	Path                 *string             `json:"path"`
	Cwd                  AbsPath             `json:"cwd"`
	CliVersion           string              `json:"cliVersion"`
	Originator           *string             `json:"originator"`
	Source               SessionSource       `json:"source"`
	CanAcceptDirectInput *bool               `json:"canAcceptDirectInput" wire:"experimental"`
	ThreadSource         *string             `json:"threadSource"`
	AgentNickname        *string             `json:"agentNickname"`
	AgentRole            *string             `json:"agentRole"`
	GitInfo              *GitInfo            `json:"gitInfo"`
	Name                 *string             `json:"name"`
	DaybreakEnabled      *bool               `json:"daybreakEnabled" wire:"experimental"`
	Turns                List[Turn]          `json:"turns"`
}

// ThreadEnvironment is an execution environment attached to a loaded thread.
type ThreadEnvironment struct {
	EnvironmentID         string       `json:"environmentId"`
	Cwd                   string       `json:"cwd"`
	RuntimeWorkspaceRoots List[string] `json:"runtimeWorkspaceRoots"`
}

// ThreadSection is the sidebar section a thread is filed under.
type ThreadSection struct {
	ID         string                   `json:"id"`
	Name       string                   `json:"name"`
	Appearance *ThreadSectionAppearance `json:"appearance"`
}

// ThreadSectionAppearance is how a section is drawn.
type ThreadSectionAppearance struct {
	Color *string `json:"color"`
	Icon  *string `json:"icon"`
}

// GitInfo is the git state of a thread's working directory.
type GitInfo struct {
	Sha       *string `json:"sha"`
	Branch    *string `json:"branch"`
	OriginURL *string `json:"originUrl"`
}

// ThreadHistoryMode is how a thread's history is persisted.
type ThreadHistoryMode string

// History modes.
const (
	HistoryLegacy    ThreadHistoryMode = "legacy"
	HistoryPaginated ThreadHistoryMode = "paginated"
)

func (ThreadHistoryMode) wireValues() []string { return values(HistoryLegacy, HistoryPaginated) }

// ThreadStatus is a thread's runtime status, tagged by "type".
type ThreadStatus struct {
	NotLoaded   *Empty              `variant:"notLoaded"`
	Idle        *Empty              `variant:"idle"`
	SystemError *Empty              `variant:"systemError"`
	Active      *ActiveThreadStatus `variant:"active"`
}

// MarshalJSON encodes the union (see union.go).
func (s ThreadStatus) MarshalJSON() ([]byte, error) { return marshalUnion(&s) }

// UnmarshalJSON decodes the union (see union.go).
func (s *ThreadStatus) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, s) }

// StatusNotLoaded returns {"type":"notLoaded"}.
func StatusNotLoaded() ThreadStatus { return ThreadStatus{NotLoaded: &Empty{}} }

// StatusIdle returns {"type":"idle"}.
func StatusIdle() ThreadStatus { return ThreadStatus{Idle: &Empty{}} }

// StatusSystemError returns {"type":"systemError"}.
func StatusSystemError() ThreadStatus { return ThreadStatus{SystemError: &Empty{}} }

// StatusActive returns {"type":"active","activeFlags":[…]}.
func StatusActive(flags ...ThreadActiveFlag) ThreadStatus {
	return ThreadStatus{Active: &ActiveThreadStatus{ActiveFlags: List[ThreadActiveFlag](flags)}}
}

// ActiveThreadStatus is the active ThreadStatus.
type ActiveThreadStatus struct {
	ActiveFlags List[ThreadActiveFlag] `json:"activeFlags"`
}

// ThreadActiveFlag says what an active thread waits for.
type ThreadActiveFlag string

// Active flags.
const (
	FlagWaitingOnApproval  ThreadActiveFlag = "waitingOnApproval"
	FlagWaitingOnUserInput ThreadActiveFlag = "waitingOnUserInput"
)

func (ThreadActiveFlag) wireValues() []string {
	return values(FlagWaitingOnApproval, FlagWaitingOnUserInput)
}

// SessionSource says what created a thread: a plain source, {"custom": name}
// or {"subAgent": …}.
type SessionSource struct {
	Kind     SessionSourceKind `key:"*"`
	Custom   *string           `key:"custom"`
	SubAgent *SubAgentSource   `key:"subAgent"`
}

// MarshalJSON encodes the union (see union.go).
func (s SessionSource) MarshalJSON() ([]byte, error) { return marshalUnion(&s) }

// UnmarshalJSON decodes the union (see union.go).
func (s *SessionSource) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, s) }

// SessionSourceKind is a plain SessionSource.
type SessionSourceKind string

// Session sources.
const (
	SourceCLI       SessionSourceKind = "cli"
	SourceVSCode    SessionSourceKind = "vscode"
	SourceExec      SessionSourceKind = "exec"
	SourceAppServer SessionSourceKind = "appServer"
	SourceUnknown   SessionSourceKind = "unknown"
)

func (SessionSourceKind) wireValues() []string {
	return values(SourceCLI, SourceVSCode, SourceExec, SourceAppServer, SourceUnknown)
}

// SubAgentSource says what kind of sub-agent created a thread.
type SubAgentSource struct {
	Kind        SubAgentKind       `key:"*"`
	ThreadSpawn *ThreadSpawnSource `key:"thread_spawn"`
	Other       *string            `key:"other"`
}

// MarshalJSON encodes the union (see union.go).
func (s SubAgentSource) MarshalJSON() ([]byte, error) { return marshalUnion(&s) }

// UnmarshalJSON decodes the union (see union.go).
func (s *SubAgentSource) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, s) }

// SubAgentKind is a plain SubAgentSource.
type SubAgentKind string

// Sub-agent kinds.
const (
	SubAgentReview              SubAgentKind = "review"
	SubAgentCompact             SubAgentKind = "compact"
	SubAgentMemoryConsolidation SubAgentKind = "memory_consolidation"
)

func (SubAgentKind) wireValues() []string {
	return values(SubAgentReview, SubAgentCompact, SubAgentMemoryConsolidation)
}

// ThreadSpawnSource describes a thread spawned by another agent (snake_case keys).
type ThreadSpawnSource struct {
	ParentThreadID string  `json:"parent_thread_id"`
	Depth          int32   `json:"depth"`
	AgentPath      *string `json:"agent_path,omitempty"`
	AgentNickname  *string `json:"agent_nickname,omitempty"`
	AgentRole      *string `json:"agent_role,omitempty"`
}

// ThreadSourceKind filters thread/list by source.
type ThreadSourceKind string

// Thread source kinds.
const (
	SourceKindCLI                 ThreadSourceKind = "cli"
	SourceKindVSCode              ThreadSourceKind = "vscode"
	SourceKindExec                ThreadSourceKind = "exec"
	SourceKindAppServer           ThreadSourceKind = "appServer"
	SourceKindSubAgent            ThreadSourceKind = "subAgent"
	SourceKindSubAgentReview      ThreadSourceKind = "subAgentReview"
	SourceKindSubAgentCompact     ThreadSourceKind = "subAgentCompact"
	SourceKindSubAgentThreadSpawn ThreadSourceKind = "subAgentThreadSpawn"
	SourceKindSubAgentOther       ThreadSourceKind = "subAgentOther"
	SourceKindUnknown             ThreadSourceKind = "unknown"
)

func (ThreadSourceKind) wireValues() []string {
	return values(SourceKindCLI, SourceKindVSCode, SourceKindExec, SourceKindAppServer, SourceKindSubAgent,
		SourceKindSubAgentReview, SourceKindSubAgentCompact, SourceKindSubAgentThreadSpawn,
		SourceKindSubAgentOther, SourceKindUnknown)
}

// ThreadStartSource says why a client started a thread.
type ThreadStartSource string

// Thread start sources.
const (
	StartSourceStartup ThreadStartSource = "startup"
	StartSourceClear   ThreadStartSource = "clear"
)

func (ThreadStartSource) wireValues() []string { return values(StartSourceStartup, StartSourceClear) }

// TurnEnvironmentParams selects an environment for a thread or turn.
type TurnEnvironmentParams struct {
	EnvironmentID         string   `json:"environmentId"`
	Cwd                   string   `json:"cwd"`
	RuntimeWorkspaceRoots []string `json:"runtimeWorkspaceRoots,omitempty"`
}

// SelectedCapabilityRoot is a capability root chosen by the hosting platform.
type SelectedCapabilityRoot struct {
	ID       string                 `json:"id"`
	Location CapabilityRootLocation `json:"location"`
}

// CapabilityRootLocation locates a capability root, tagged by "type".
type CapabilityRootLocation struct {
	Environment *EnvironmentRootLocation `variant:"environment"`
}

// MarshalJSON encodes the union (see union.go).
func (l CapabilityRootLocation) MarshalJSON() ([]byte, error) { return marshalUnion(&l) }

// UnmarshalJSON decodes the union (see union.go).
func (l *CapabilityRootLocation) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, l) }

// EnvironmentRootLocation is a path inside an environment.
type EnvironmentRootLocation struct {
	EnvironmentID string `json:"environmentId"`
	Path          string `json:"path"`
}

// ThreadStartParams are the params of thread/start. All are optional.
type ThreadStartParams struct {
	Model                      *string                  `json:"model,omitempty"`
	ModelProvider              *string                  `json:"modelProvider,omitempty"`
	ServiceTier                *string                  `json:"serviceTier,omitempty"`
	Cwd                        *string                  `json:"cwd,omitempty"`
	ApprovalPolicy             *AskForApproval          `json:"approvalPolicy,omitempty"`
	ApprovalsReviewer          *ApprovalsReviewer       `json:"approvalsReviewer,omitempty"`
	Sandbox                    *SandboxMode             `json:"sandbox,omitempty"`
	Config                     map[string]any           `json:"config,omitempty"`
	BaseInstructions           *string                  `json:"baseInstructions,omitempty"`
	DeveloperInstructions      *string                  `json:"developerInstructions,omitempty"`
	Personality                *Personality             `json:"personality,omitempty"`
	Ephemeral                  *bool                    `json:"ephemeral,omitempty"`
	ServiceName                *string                  `json:"serviceName,omitempty"`
	SessionStartSource         *ThreadStartSource       `json:"sessionStartSource,omitempty"`
	ThreadSource               *string                  `json:"threadSource,omitempty"`
	DynamicTools               []DynamicToolSpec        `json:"dynamicTools,omitempty" wire:"experimental"`
	ExperimentalRawEvents      bool                     `json:"experimentalRawEvents,omitempty" wire:"experimental"`
	HistoryMode                *ThreadHistoryMode       `json:"historyMode,omitempty" wire:"experimental"`
	Environments               []TurnEnvironmentParams  `json:"environments,omitempty" wire:"experimental"`
	Permissions                *string                  `json:"permissions,omitempty" wire:"experimental"`
	ProjectID                  *string                  `json:"projectId,omitempty" wire:"experimental"`
	RuntimeWorkspaceRoots      []AbsPath                `json:"runtimeWorkspaceRoots,omitempty" wire:"experimental"`
	SelectedCapabilityRoots    []SelectedCapabilityRoot `json:"selectedCapabilityRoots,omitempty" wire:"experimental"`
	AllowProviderModelFallback bool                     `json:"allowProviderModelFallback,omitempty" wire:"experimental"`
	DaybreakEnabled            *bool                    `json:"daybreakEnabled,omitempty" wire:"experimental"`
	MultiAgentMode             *MultiAgentMode          `json:"multiAgentMode,omitempty" wire:"experimental"`
	MockExperimentalField      *string                  `json:"mockExperimentalField,omitempty" wire:"experimental"`
}

// ThreadStartResponse is the result of thread/start: exactly these 14 keys.
type ThreadStartResponse struct {
	Thread                  Thread                   `json:"thread"`
	Model                   string                   `json:"model"`
	ModelProvider           string                   `json:"modelProvider"`
	ServiceTier             *string                  `json:"serviceTier"`
	DisabledPluginIDs       List[string]             `json:"disabledPluginIds" wire:"optional"`
	Cwd                     AbsPath                  `json:"cwd"`
	RuntimeWorkspaceRoots   List[AbsPath]            `json:"runtimeWorkspaceRoots" wire:"optional,experimental"`
	InstructionSources      List[string]             `json:"instructionSources" wire:"optional"`
	ApprovalPolicy          AskForApproval           `json:"approvalPolicy"`
	ApprovalsReviewer       ApprovalsReviewer        `json:"approvalsReviewer"`
	Sandbox                 SandboxPolicy            `json:"sandbox"`
	ActivePermissionProfile *ActivePermissionProfile `json:"activePermissionProfile" wire:"experimental"`
	ReasoningEffort         *ReasoningEffort         `json:"reasoningEffort"`
	MultiAgentMode          MultiAgentMode           `json:"multiAgentMode" wire:"optional,experimental"`
}

// ThreadResumeParams are the params of thread/resume.
type ThreadResumeParams struct {
	ThreadID              string                              `json:"threadId"`
	Model                 *string                             `json:"model,omitempty"`
	ModelProvider         *string                             `json:"modelProvider,omitempty"`
	ServiceTier           *string                             `json:"serviceTier,omitempty"`
	Cwd                   *string                             `json:"cwd,omitempty"`
	ApprovalPolicy        *AskForApproval                     `json:"approvalPolicy,omitempty"`
	ApprovalsReviewer     *ApprovalsReviewer                  `json:"approvalsReviewer,omitempty"`
	Sandbox               *SandboxMode                        `json:"sandbox,omitempty"`
	Config                map[string]any                      `json:"config,omitempty"`
	BaseInstructions      *string                             `json:"baseInstructions,omitempty"`
	DeveloperInstructions *string                             `json:"developerInstructions,omitempty"`
	Personality           *Personality                        `json:"personality,omitempty"`
	ExcludeTurns          bool                                `json:"excludeTurns,omitempty"`
	History               []any                               `json:"history,omitempty" wire:"experimental"`
	Path                  *string                             `json:"path,omitempty" wire:"experimental,emptydefault"`
	InitialTurnsPage      *ThreadResumeInitialTurnsPageParams `json:"initialTurnsPage,omitempty" wire:"experimental"`
	Permissions           *string                             `json:"permissions,omitempty" wire:"experimental"`
	RuntimeWorkspaceRoots []AbsPath                           `json:"runtimeWorkspaceRoots,omitempty" wire:"experimental"`
}

// ThreadResumeInitialTurnsPageParams asks thread/resume for a first page of turns.
type ThreadResumeInitialTurnsPageParams struct {
	Limit         *uint32        `json:"limit,omitempty"`
	ItemsView     *TurnItemsView `json:"itemsView,omitempty"`
	SortDirection *SortDirection `json:"sortDirection,omitempty"`
}

// ThreadResumeResponse is the result of thread/resume.
type ThreadResumeResponse struct {
	Thread                  Thread                   `json:"thread"`
	Model                   string                   `json:"model"`
	ModelProvider           string                   `json:"modelProvider"`
	ServiceTier             *string                  `json:"serviceTier"`
	DisabledPluginIDs       List[string]             `json:"disabledPluginIds" wire:"optional"`
	Cwd                     AbsPath                  `json:"cwd"`
	RuntimeWorkspaceRoots   List[AbsPath]            `json:"runtimeWorkspaceRoots" wire:"optional,experimental"`
	InstructionSources      List[string]             `json:"instructionSources" wire:"optional"`
	ApprovalPolicy          AskForApproval           `json:"approvalPolicy"`
	ApprovalsReviewer       ApprovalsReviewer        `json:"approvalsReviewer"`
	Sandbox                 SandboxPolicy            `json:"sandbox"`
	ActivePermissionProfile *ActivePermissionProfile `json:"activePermissionProfile" wire:"experimental"`
	ReasoningEffort         *ReasoningEffort         `json:"reasoningEffort"`
	CollaborationMode       *CollaborationMode       `json:"collaborationMode"`
	MultiAgentMode          MultiAgentMode           `json:"multiAgentMode" wire:"optional,experimental"`
	InitialTurnsPage        *TurnsPage               `json:"initialTurnsPage" wire:"experimental"`
	TurnsBackwardsCursor    *string                  `json:"turnsBackwardsCursor"`
	ItemsBackwardsCursor    *string                  `json:"itemsBackwardsCursor"`
}

// TurnsPage is a page of turns.
type TurnsPage struct {
	Data            List[Turn] `json:"data"`
	NextCursor      *string    `json:"nextCursor"`
	BackwardsCursor *string    `json:"backwardsCursor"`
}

// ThreadForkParams are the params of thread/fork.
type ThreadForkParams struct {
	ThreadID                         string             `json:"threadId"`
	Model                            *string            `json:"model,omitempty"`
	ModelProvider                    *string            `json:"modelProvider,omitempty"`
	ServiceTier                      *string            `json:"serviceTier,omitempty"`
	Cwd                              *string            `json:"cwd,omitempty"`
	ApprovalPolicy                   *AskForApproval    `json:"approvalPolicy,omitempty"`
	ApprovalsReviewer                *ApprovalsReviewer `json:"approvalsReviewer,omitempty"`
	Sandbox                          *SandboxMode       `json:"sandbox,omitempty"`
	Config                           map[string]any     `json:"config,omitempty"`
	BaseInstructions                 *string            `json:"baseInstructions,omitempty"`
	DeveloperInstructions            *string            `json:"developerInstructions,omitempty"`
	Ephemeral                        bool               `json:"ephemeral,omitempty"`
	ExcludeTurns                     bool               `json:"excludeTurns,omitempty"`
	LastTurnID                       *string            `json:"lastTurnId,omitempty"`
	ThreadSource                     *string            `json:"threadSource,omitempty"`
	BeforeTurnID                     *string            `json:"beforeTurnId,omitempty" wire:"experimental"`
	AttachToSource                   bool               `json:"attachToSource,omitempty" wire:"experimental"`
	DeferGoalContinuation            bool               `json:"deferGoalContinuation,omitempty" wire:"experimental"`
	ExperimentalPredictionMode       bool               `json:"experimentalPredictionMode,omitempty" wire:"experimental"`
	ExperimentalDisablePredictionMcp bool               `json:"experimentalDisablePredictionMcp,omitempty" wire:"experimental"`
	Path                             *string            `json:"path,omitempty" wire:"experimental,emptydefault"`
	Permissions                      *string            `json:"permissions,omitempty" wire:"experimental"`
	RuntimeWorkspaceRoots            []AbsPath          `json:"runtimeWorkspaceRoots,omitempty" wire:"experimental"`
}

// ThreadForkResponse is the result of thread/fork (the keys of ThreadStartResponse).
type ThreadForkResponse = ThreadStartResponse

// ThreadIDParams are the params of methods that take only a thread id
// (thread/archive, thread/unarchive, thread/delete, thread/unsubscribe,
// thread/compact/start, thread/goal/get).
type ThreadIDParams struct {
	ThreadID string `json:"threadId"`
}

// ThreadUnarchiveResponse is the result of thread/unarchive.
type ThreadUnarchiveResponse struct {
	Thread Thread `json:"thread"`
}

// ThreadUnsubscribeResponse is the result of thread/unsubscribe.
type ThreadUnsubscribeResponse struct {
	Status ThreadUnsubscribeStatus `json:"status"`
}

// ThreadUnsubscribeStatus says what thread/unsubscribe did.
type ThreadUnsubscribeStatus string

// Unsubscribe outcomes.
const (
	UnsubscribeNotLoaded     ThreadUnsubscribeStatus = "notLoaded"
	UnsubscribeNotSubscribed ThreadUnsubscribeStatus = "notSubscribed"
	UnsubscribeUnsubscribed  ThreadUnsubscribeStatus = "unsubscribed"
)

func (ThreadUnsubscribeStatus) wireValues() []string {
	return values(UnsubscribeNotLoaded, UnsubscribeNotSubscribed, UnsubscribeUnsubscribed)
}

// ThreadSetNameParams are the params of thread/name/set.
type ThreadSetNameParams struct {
	ThreadID string `json:"threadId"`
	Name     string `json:"name"`
}

// ThreadMetadataUpdateParams are the params of thread/metadata/update,
// which agentd does not serve (-32601 once decoded and gated; see
// docs/compatibility.md): the reference keeps the patched metadata in its
// SQLite state, which agentd does not have.
type ThreadMetadataUpdateParams struct {
	ThreadID        string                             `json:"threadId"`
	GitInfo         *ThreadMetadataGitInfoUpdateParams `json:"gitInfo,omitempty"`
	DaybreakEnabled *bool                              `json:"daybreakEnabled,omitempty" wire:"experimental"`
	ProjectID       *string                            `json:"projectId,omitempty" wire:"experimental"`
}

// ThreadMetadataGitInfoUpdateParams patch a thread's git metadata: a
// field left out is unchanged, null clears it.
type ThreadMetadataGitInfoUpdateParams struct {
	Sha       *string `json:"sha,omitempty"`
	Branch    *string `json:"branch,omitempty"`
	OriginURL *string `json:"originUrl,omitempty"`
}

// ThreadMetadataUpdateResponse is the result of thread/metadata/update.
type ThreadMetadataUpdateResponse struct {
	Thread Thread `json:"thread"`
}

// ThreadListParams are the params of thread/list. All are optional.
type ThreadListParams struct {
	Cursor                 *string              `json:"cursor,omitempty"`
	Limit                  *uint32              `json:"limit,omitempty"`
	SortKey                *ThreadSortKey       `json:"sortKey,omitempty"`
	SortDirection          *SortDirection       `json:"sortDirection,omitempty"`
	ModelProviders         []string             `json:"modelProviders,omitempty"`
	SourceKinds            []ThreadSourceKind   `json:"sourceKinds,omitempty"`
	Archived               *bool                `json:"archived,omitempty"`
	Cwd                    *ThreadListCwdFilter `json:"cwd,omitempty"`
	SearchTerm             *string              `json:"searchTerm,omitempty"`
	SectionID              *string              `json:"sectionId,omitempty"`
	ExcludedThreadIDs      []string             `json:"excludedThreadIds,omitempty"`
	Originators            []string             `json:"originators,omitempty"`
	CurrentAccountOnly     bool                 `json:"currentAccountOnly,omitempty"`
	UseStateDBOnly         bool                 `json:"useStateDbOnly,omitempty"`
	ParentThreadID         *string              `json:"parentThreadId,omitempty" wire:"experimental"`
	AncestorThreadID       *string              `json:"ancestorThreadId,omitempty" wire:"experimental"`
	AttachedToThreadID     *string              `json:"attachedToThreadId,omitempty" wire:"experimental"`
	IncludeAttachedThreads bool                 `json:"includeAttachedThreads,omitempty" wire:"experimental"`
	ProjectID              *string              `json:"projectId,omitempty" wire:"experimental,nullvalue"`
}

// ThreadSortKey orders thread/list.
type ThreadSortKey string

// Thread sort keys.
const (
	SortCreatedAt       ThreadSortKey = "created_at"
	SortUpdatedAt       ThreadSortKey = "updated_at"
	SortRecencyAt       ThreadSortKey = "recency_at"
	SortSectionPosition ThreadSortKey = "section_position"
)

func (ThreadSortKey) wireValues() []string {
	return values(SortCreatedAt, SortUpdatedAt, SortRecencyAt, SortSectionPosition)
}

// ThreadListCwdFilter is one working directory or a list of them.
type ThreadListCwdFilter struct {
	Paths []string
	// One is set when the filter was a single string.
	One bool
}

// MarshalJSON writes a string or an array of strings.
func (f ThreadListCwdFilter) MarshalJSON() ([]byte, error) {
	if f.One && len(f.Paths) == 1 {
		return jsonMarshal(f.Paths[0])
	}
	return jsonMarshal(List[string](f.Paths))
}

// UnmarshalJSON reads a string or an array of strings.
func (f *ThreadListCwdFilter) UnmarshalJSON(b []byte) error {
	var one string
	if jsonUnmarshal(b, &one) == nil {
		*f = ThreadListCwdFilter{Paths: []string{one}, One: true}
		return nil
	}
	var many []string
	if jsonUnmarshal(b, &many) == nil && many != nil {
		*f = ThreadListCwdFilter{Paths: many}
		return nil
	}
	return &decodeError{"data did not match any variant of untagged enum ThreadListCwdFilter"}
}

// WireSchema describes ThreadListCwdFilter.
func (ThreadListCwdFilter) WireSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string"},
		map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}}
}

// ThreadListResponse is the result of thread/list.
type ThreadListResponse struct {
	Data            List[Thread]         `json:"data"`
	NextCursor      *string              `json:"nextCursor"`
	BackwardsCursor *string              `json:"backwardsCursor"`
	ReadStates      Map[ThreadReadState] `json:"readStates" wire:"optional,experimental"`
}

// ThreadReadState is a thread's unread position.
type ThreadReadState struct {
	FirstUnread *ThreadUnreadPosition `json:"firstUnread"`
	Revision    string                `json:"revision"`
}

// ThreadUnreadPosition is where unread content starts, tagged by "type".
type ThreadUnreadPosition struct {
	ThreadStart *Empty              `variant:"threadStart"`
	Turn        *TurnUnreadPosition `variant:"turn"`
}

// MarshalJSON encodes the union (see union.go).
func (p ThreadUnreadPosition) MarshalJSON() ([]byte, error) { return marshalUnion(&p) }

// UnmarshalJSON decodes the union (see union.go).
func (p *ThreadUnreadPosition) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, p) }

// TurnUnreadPosition is unread content starting at a turn.
type TurnUnreadPosition struct {
	TurnID string `json:"turnId"`
}

// ThreadLoadedListParams are the params of thread/loaded/list.
type ThreadLoadedListParams struct {
	Cursor *string `json:"cursor,omitempty"`
	Limit  *uint32 `json:"limit,omitempty"`
}

// ThreadLoadedListResponse is the result of thread/loaded/list.
type ThreadLoadedListResponse struct {
	Data       List[string] `json:"data"`
	NextCursor *string      `json:"nextCursor"`
}

// ThreadReadParams are the params of thread/read.
type ThreadReadParams struct {
	ThreadID     string `json:"threadId"`
	IncludeTurns bool   `json:"includeTurns,omitempty"`
}

// ThreadReadResponse is the result of thread/read.
type ThreadReadResponse struct {
	Thread    Thread           `json:"thread"`
	ReadState *ThreadReadState `json:"readState" wire:"experimental"`
}

// ThreadTurnsListParams are the params of thread/turns/list.
type ThreadTurnsListParams struct {
	ThreadID      string         `json:"threadId"`
	Cursor        *string        `json:"cursor,omitempty"`
	Limit         *uint32        `json:"limit,omitempty"`
	SortDirection *SortDirection `json:"sortDirection,omitempty"`
	ItemsView     *TurnItemsView `json:"itemsView,omitempty"`
}

// ThreadTurnsListResponse is the result of thread/turns/list.
type ThreadTurnsListResponse = TurnsPage

// ThreadItemsListParams are the params of thread/items/list.
type ThreadItemsListParams struct {
	ThreadID      string                    `json:"threadId"`
	TurnID        *string                   `json:"turnId,omitempty"`
	Cursor        *ThreadItemsListCursor    `json:"cursor,omitempty"`
	Limit         *uint32                   `json:"limit,omitempty"`
	SortDirection *SortDirection            `json:"sortDirection,omitempty"`
	DeferOutput   *ThreadItemOutputDeferral `json:"deferOutput,omitempty"`
}

// ThreadItemsListCursor is an opaque cursor string or {"type":"item","itemId":…}.
type ThreadItemsListCursor struct {
	Cursor string
	// ItemID is set for an item anchor instead of Cursor.
	ItemID string
}

// MarshalJSON writes the cursor string or the item anchor.
func (c ThreadItemsListCursor) MarshalJSON() ([]byte, error) {
	if c.ItemID != "" {
		return jsonMarshal(map[string]string{"type": "item", "itemId": c.ItemID})
	}
	return jsonMarshal(c.Cursor)
}

// UnmarshalJSON reads a cursor string or an item anchor.
func (c *ThreadItemsListCursor) UnmarshalJSON(b []byte) error {
	var s string
	if jsonUnmarshal(b, &s) == nil {
		*c = ThreadItemsListCursor{Cursor: s}
		return nil
	}
	var a struct {
		Type   string `json:"type"`
		ItemID string `json:"itemId"`
	}
	if jsonUnmarshal(b, &a) == nil && a.Type == "item" && a.ItemID != "" {
		*c = ThreadItemsListCursor{ItemID: a.ItemID}
		return nil
	}
	return &decodeError{"data did not match any variant of untagged enum ThreadItemsListCursor"}
}

// WireSchema describes ThreadItemsListCursor.
func (ThreadItemsListCursor) WireSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string"},
		map[string]any{"type": "object", "required": []any{"itemId", "type"}, "properties": map[string]any{
			"type":   map[string]any{"type": "string", "enum": []any{"item"}},
			"itemId": map[string]any{"type": "string"},
		}},
	}}
}

// ThreadItemOutputDeferral asks thread/items/list to leave large outputs out.
type ThreadItemOutputDeferral struct {
	CommandExecution bool `json:"commandExecution,omitempty" wire:"experimental"`
	McpToolCall      bool `json:"mcpToolCall,omitempty" wire:"experimental"`
}

// ThreadItemsListResponse is the result of thread/items/list.
type ThreadItemsListResponse struct {
	Data            List[ThreadItemEntry] `json:"data"`
	NextCursor      *string               `json:"nextCursor"`
	BackwardsCursor *string               `json:"backwardsCursor"`
}

// ThreadItemEntry is one item of thread/items/list with its turn.
type ThreadItemEntry struct {
	TurnID         string     `json:"turnId"`
	Item           ThreadItem `json:"item"`
	StartedAtMs    *int64     `json:"startedAtMs"`
	CompletedAtMs  *int64     `json:"completedAtMs"`
	OutputDeferred bool       `json:"outputDeferred,omitempty" wire:"experimental"`
}

// ThreadShellCommandParams are the params of thread/shellCommand.
type ThreadShellCommandParams struct {
	ThreadID  string `json:"threadId"`
	Command   string `json:"command"`
	TimeoutMs *int64 `json:"timeoutMs,omitempty"`
}

// ThreadInjectItemsParams are the params of thread/inject_items: raw
// Responses API items for the next model request.
type ThreadInjectItemsParams struct {
	ThreadID string `json:"threadId"`
	Items    []any  `json:"items"`
}

// ThreadRevertParams are the params of thread/revert (the reference's
// replacement for thread/rollback).
type ThreadRevertParams struct {
	ThreadID     string `json:"threadId"`
	BeforeTurnID string `json:"beforeTurnId"`
}

// ThreadRevertResponse is the result of thread/revert.
type ThreadRevertResponse struct {
	Thread               Thread  `json:"thread"`
	TurnsBackwardsCursor *string `json:"turnsBackwardsCursor"`
	ItemsBackwardsCursor *string `json:"itemsBackwardsCursor"`
}

// ThreadSettingsUpdateParams are the params of thread/settings/update
// (experimental): settings for the thread's next turns.
type ThreadSettingsUpdateParams struct {
	ThreadID          string                  `json:"threadId"`
	Cwd               *string                 `json:"cwd,omitempty"`
	ApprovalPolicy    *AskForApproval         `json:"approvalPolicy,omitempty"`
	ApprovalsReviewer *ApprovalsReviewer      `json:"approvalsReviewer,omitempty"`
	SandboxPolicy     *SandboxPolicy          `json:"sandboxPolicy,omitempty"`
	Permissions       *string                 `json:"permissions,omitempty"`
	Model             *string                 `json:"model,omitempty"`
	ServiceTier       *string                 `json:"serviceTier,omitempty"`
	Effort            *ReasoningEffort        `json:"effort,omitempty"`
	Summary           *ReasoningSummary       `json:"summary,omitempty"`
	Personality       *Personality            `json:"personality,omitempty"`
	CollaborationMode *CollaborationMode      `json:"collaborationMode,omitempty"`
	DisabledPluginIDs []string                `json:"disabledPluginIds,omitempty"`
	Environments      []TurnEnvironmentParams `json:"environments,omitempty"`
	MultiAgentMode    *MultiAgentMode         `json:"multiAgentMode,omitempty"`
}

// ThreadSettings are a thread's settings for its next turns.
type ThreadSettings struct {
	DisabledPluginIDs       List[string]             `json:"disabledPluginIds" wire:"optional"`
	Cwd                     AbsPath                  `json:"cwd"`
	Environments            []ThreadEnvironment      `json:"environments" wire:"optional,experimental"`
	ApprovalPolicy          AskForApproval           `json:"approvalPolicy"`
	ApprovalsReviewer       ApprovalsReviewer        `json:"approvalsReviewer"`
	SandboxPolicy           SandboxPolicy            `json:"sandboxPolicy"`
	ActivePermissionProfile *ActivePermissionProfile `json:"activePermissionProfile"`
	Model                   string                   `json:"model"`
	ModelProvider           string                   `json:"modelProvider"`
	ServiceTier             *string                  `json:"serviceTier"`
	Effort                  *ReasoningEffort         `json:"effort"`
	Summary                 *ReasoningSummary        `json:"summary"`
	CollaborationMode       CollaborationMode        `json:"collaborationMode"`
	Personality             *Personality             `json:"personality"`
	MultiAgentMode          MultiAgentMode           `json:"multiAgentMode" wire:"optional,experimental"`
}

// ThreadReadStateUpdateParams are the params of thread/readState/update
// (experimental).
type ThreadReadStateUpdateParams struct {
	ThreadID         string                   `json:"threadId"`
	ExpectedRevision string                   `json:"expectedRevision"`
	Operation        ThreadReadStateOperation `json:"operation"`
}

// ThreadReadStateOperation marks a thread read or unread, tagged by "type".
type ThreadReadStateOperation struct {
	Read   *Empty `variant:"read"`
	Unread *Empty `variant:"unread"`
}

// MarshalJSON encodes the union (see union.go).
func (o ThreadReadStateOperation) MarshalJSON() ([]byte, error) { return marshalUnion(&o) }

// UnmarshalJSON decodes the union (see union.go).
func (o *ThreadReadStateOperation) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, o) }

// ThreadReadStateUpdateResponse is the result of thread/readState/update.
type ThreadReadStateUpdateResponse struct {
	ReadState ThreadReadState `json:"readState"`
}

// ThreadGoalGetResponse is the result of thread/goal/get.
type ThreadGoalGetResponse struct {
	Goal *ThreadGoal `json:"goal"`
}

// ThreadGoal is a thread's standing objective.
type ThreadGoal struct {
	ThreadID        string           `json:"threadId"`
	Objective       string           `json:"objective"`
	Status          ThreadGoalStatus `json:"status"`
	TokenBudget     *int64           `json:"tokenBudget"`
	TokensUsed      int64            `json:"tokensUsed"`
	TimeUsedSeconds int64            `json:"timeUsedSeconds"`
	CreatedAt       int64            `json:"createdAt"`
	UpdatedAt       int64            `json:"updatedAt"`
}

// ThreadGoalStatus is the state of a ThreadGoal.
type ThreadGoalStatus string

// Goal states.
const (
	GoalActive        ThreadGoalStatus = "active"
	GoalPaused        ThreadGoalStatus = "paused"
	GoalBlocked       ThreadGoalStatus = "blocked"
	GoalUsageLimited  ThreadGoalStatus = "usageLimited"
	GoalBudgetLimited ThreadGoalStatus = "budgetLimited"
	GoalComplete      ThreadGoalStatus = "complete"
)

func (ThreadGoalStatus) wireValues() []string {
	return values(GoalActive, GoalPaused, GoalBlocked, GoalUsageLimited, GoalBudgetLimited, GoalComplete)
}

// ThreadBackgroundTerminalsListParams are the params of
// thread/backgroundTerminals/list (experimental).
type ThreadBackgroundTerminalsListParams struct {
	ThreadID string  `json:"threadId"`
	Cursor   *string `json:"cursor,omitempty"`
	Limit    *uint32 `json:"limit,omitempty"`
}

// ThreadBackgroundTerminalsListResponse is the result of thread/backgroundTerminals/list.
type ThreadBackgroundTerminalsListResponse struct {
	Data       List[ThreadBackgroundTerminal] `json:"data"`
	NextCursor *string                        `json:"nextCursor"`
}

// ThreadBackgroundTerminal is a command still running in the background.
type ThreadBackgroundTerminal struct {
	ProcessID  string   `json:"processId"`
	ItemID     string   `json:"itemId"`
	Command    string   `json:"command"`
	Cwd        string   `json:"cwd"`
	OsPid      *uint32  `json:"osPid"`
	CPUPercent *float64 `json:"cpuPercent"`
	RssKb      *uint64  `json:"rssKb"`
}
