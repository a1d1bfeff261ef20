package protocol

// Server → client requests. CommandExecutionRequestApprovalParams omits
// absent optional fields; the others write them as null, as the reference does.

// CommandExecutionRequestApprovalParams ask the client to approve a command.
type CommandExecutionRequestApprovalParams struct {
	Kind                            *CommandExecutionApprovalKind      `json:"kind,omitempty"`
	ThreadID                        string                             `json:"threadId"`
	TurnID                          string                             `json:"turnId"`
	ItemID                          string                             `json:"itemId"`
	StartedAtMs                     int64                              `json:"startedAtMs"`
	ApprovalID                      *string                            `json:"approvalId,omitempty"`
	Reason                          *string                            `json:"reason,omitempty"`
	EnvironmentID                   *string                            `json:"environmentId,omitempty"`
	NetworkApprovalContext          *NetworkApprovalContext            `json:"networkApprovalContext,omitempty"`
	Command                         *string                            `json:"command,omitempty"`
	Cwd                             *string                            `json:"cwd,omitempty"`
	CommandActions                  []CommandAction                    `json:"commandActions,omitempty"`
	ProposedExecpolicyAmendment     []string                           `json:"proposedExecpolicyAmendment,omitempty"`
	ProposedNetworkPolicyAmendments []NetworkPolicyAmendment           `json:"proposedNetworkPolicyAmendments,omitempty"`
	AvailableDecisions              []CommandExecutionApprovalDecision `json:"availableDecisions,omitempty" wire:"experimental"`
	AdditionalPermissions           *AdditionalPermissionProfile       `json:"additionalPermissions,omitempty" wire:"experimental"`
}

// CommandExecutionApprovalKind says what is being approved.
type CommandExecutionApprovalKind string

// Approval kinds.
const (
	ApprovalKindCommand      CommandExecutionApprovalKind = "command"
	ApprovalKindWriteStdin   CommandExecutionApprovalKind = "writeStdin"
	ApprovalKindHumanCommand CommandExecutionApprovalKind = "humanCommand"
)

func (CommandExecutionApprovalKind) wireValues() []string {
	return values(ApprovalKindCommand, ApprovalKindWriteStdin, ApprovalKindHumanCommand)
}

// NetworkApprovalContext describes a network access needing approval.
type NetworkApprovalContext struct {
	Host     string                  `json:"host"`
	Protocol NetworkApprovalProtocol `json:"protocol"`
}

// NetworkApprovalProtocol is the protocol of a network access.
type NetworkApprovalProtocol string

// Network protocols.
const (
	ProtocolHTTP      NetworkApprovalProtocol = "http"
	ProtocolHTTPS     NetworkApprovalProtocol = "https"
	ProtocolSocks5TCP NetworkApprovalProtocol = "socks5Tcp"
	ProtocolSocks5UDP NetworkApprovalProtocol = "socks5Udp"
)

func (NetworkApprovalProtocol) wireValues() []string {
	return values(ProtocolHTTP, ProtocolHTTPS, ProtocolSocks5TCP, ProtocolSocks5UDP)
}

// NetworkPolicyAmendment allows or denies a host from now on.
type NetworkPolicyAmendment struct {
	Host   string                  `json:"host"`
	Action NetworkPolicyRuleAction `json:"action"`
}

// NetworkPolicyRuleAction is allow or deny.
type NetworkPolicyRuleAction string

// Network rule actions.
const (
	RuleAllow NetworkPolicyRuleAction = "allow"
	RuleDeny  NetworkPolicyRuleAction = "deny"
)

func (NetworkPolicyRuleAction) wireValues() []string { return values(RuleAllow, RuleDeny) }

// AdditionalPermissionProfile are extra permissions a command asks for.
type AdditionalPermissionProfile struct {
	Network    *AdditionalNetworkPermissions    `json:"network,omitempty"`
	FileSystem *AdditionalFileSystemPermissions `json:"fileSystem,omitempty"`
}

// AdditionalNetworkPermissions asks for network access.
type AdditionalNetworkPermissions struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// AdditionalFileSystemPermissions asks for file system access.
type AdditionalFileSystemPermissions struct {
	Read             []string `json:"read,omitempty"`
	Write            []string `json:"write,omitempty"`
	Entries          []any    `json:"entries,omitempty"`
	GlobScanMaxDepth *uint    `json:"globScanMaxDepth,omitempty"`
}

// CommandExecutionRequestApprovalResponse is the client's answer.
type CommandExecutionRequestApprovalResponse struct {
	Decision CommandExecutionApprovalDecision `json:"decision"`
}

// CommandExecutionApprovalDecision is a plain decision or an amendment object.
type CommandExecutionApprovalDecision struct {
	Decision                      ApprovalDecision           `key:"*"`
	AcceptWithExecpolicyAmendment *ExecpolicyAmendment       `key:"acceptWithExecpolicyAmendment"`
	ApplyNetworkPolicyAmendment   *NetworkPolicyAmendmentBox `key:"applyNetworkPolicyAmendment"`
}

// MarshalJSON encodes the union (see union.go).
func (d CommandExecutionApprovalDecision) MarshalJSON() ([]byte, error) { return marshalUnion(&d) }

// UnmarshalJSON decodes the union (see union.go).
func (d *CommandExecutionApprovalDecision) UnmarshalJSON(b []byte) error {
	return unmarshalUnion(b, d)
}

// Decision returns a CommandExecutionApprovalDecision with a plain decision.
func Decision(d ApprovalDecision) CommandExecutionApprovalDecision {
	return CommandExecutionApprovalDecision{Decision: d}
}

// ApprovalDecision is a plain approval decision.
type ApprovalDecision string

// Approval decisions. Cancel also interrupts the turn.
const (
	DecisionAccept           ApprovalDecision = "accept"
	DecisionAcceptForSession ApprovalDecision = "acceptForSession"
	DecisionDecline          ApprovalDecision = "decline"
	DecisionCancel           ApprovalDecision = "cancel"
)

func (ApprovalDecision) wireValues() []string {
	return values(DecisionAccept, DecisionAcceptForSession, DecisionDecline, DecisionCancel)
}

// ExecpolicyAmendment accepts and adds a command prefix rule (snake_case key).
type ExecpolicyAmendment struct {
	ExecpolicyAmendment List[string] `json:"execpolicy_amendment"`
}

// NetworkPolicyAmendmentBox applies a network rule (snake_case key).
type NetworkPolicyAmendmentBox struct {
	NetworkPolicyAmendment NetworkPolicyAmendment `json:"network_policy_amendment"`
}

// FileChangeRequestApprovalParams ask the client to approve a patch.
type FileChangeRequestApprovalParams struct {
	ThreadID    string  `json:"threadId"`
	TurnID      string  `json:"turnId"`
	ItemID      string  `json:"itemId"`
	StartedAtMs int64   `json:"startedAtMs"`
	Reason      *string `json:"reason"`
	GrantRoot   *string `json:"grantRoot"`
}

// FileChangeRequestApprovalResponse is the client's answer.
type FileChangeRequestApprovalResponse struct {
	Decision ApprovalDecision `json:"decision"`
}

// ToolRequestUserInputParams ask the user questions.
type ToolRequestUserInputParams struct {
	ThreadID         string                             `json:"threadId"`
	TurnID           string                             `json:"turnId"`
	ItemID           string                             `json:"itemId"`
	Questions        List[ToolRequestUserInputQuestion] `json:"questions"`
	IsBlocking       bool                               `json:"isBlocking"`
	AutoResolutionMs *uint64                            `json:"autoResolutionMs"`
}

// ToolRequestUserInputQuestion is one question.
type ToolRequestUserInputQuestion struct {
	ID       string                       `json:"id"`
	Header   string                       `json:"header"`
	Question string                       `json:"question"`
	IsOther  bool                         `json:"isOther" wire:"optional"`
	IsSecret bool                         `json:"isSecret" wire:"optional"`
	Options  []ToolRequestUserInputOption `json:"options" wire:"optional"`
}

// ToolRequestUserInputOption is a suggested answer.
type ToolRequestUserInputOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// ToolRequestUserInputResponse maps question ids to answers.
type ToolRequestUserInputResponse struct {
	Answers map[string]ToolRequestUserInputAnswer `json:"answers"`
}

// ToolRequestUserInputAnswer is the answer to one question.
type ToolRequestUserInputAnswer struct {
	Answers []string `json:"answers"`
}

// DynamicToolCallParams ask the client to run one of its dynamic tools.
type DynamicToolCallParams struct {
	ThreadID  string  `json:"threadId"`
	TurnID    string  `json:"turnId"`
	CallID    string  `json:"callId"`
	Namespace *string `json:"namespace"`
	Tool      string  `json:"tool"`
	Arguments any     `json:"arguments"`
}

// DynamicToolCallResponse is the tool's output.
type DynamicToolCallResponse struct {
	ContentItems []DynamicToolCallOutputContentItem `json:"contentItems"`
	Success      bool                               `json:"success"`
}

// DynamicToolSpec declares a client tool on thread/start, tagged by "type";
// a spec without "type" is a function, as the reference reads it.
type DynamicToolSpec struct {
	Function  *DynamicFunctionTool  `variant:"function" wire:"untagged"`
	Namespace *DynamicToolNamespace `variant:"namespace"`
}

// MarshalJSON encodes the union (see union.go).
func (s DynamicToolSpec) MarshalJSON() ([]byte, error) { return marshalUnion(&s) }

// UnmarshalJSON decodes the union (see union.go).
func (s *DynamicToolSpec) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, s) }

// DynamicFunctionTool is a function the client implements.
type DynamicFunctionTool struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	InputSchema  any    `json:"inputSchema"`
	DeferLoading bool   `json:"deferLoading,omitempty"`
}

// DynamicToolNamespace groups functions under a name.
type DynamicToolNamespace struct {
	Name        string                 `json:"name"`
	Description string                 `json:"description"`
	Tools       []DynamicNamespaceTool `json:"tools"`
}

// DynamicNamespaceTool is a tool inside a namespace, tagged by "type".
type DynamicNamespaceTool struct {
	Function *DynamicFunctionTool `variant:"function"`
}

// MarshalJSON encodes the union (see union.go).
func (t DynamicNamespaceTool) MarshalJSON() ([]byte, error) { return marshalUnion(&t) }

// UnmarshalJSON decodes the union (see union.go).
func (t *DynamicNamespaceTool) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, t) }

// McpServerElicitationRequestParams ask the user, for an MCP server,
// either to approve one of its tool calls or to fill in the form the
// server sent (mcpServer/elicitation/request). The reference's schema
// makes it one variant per mode; agentd sends the "form" mode, so the
// fields of the other modes are optional here.
type McpServerElicitationRequestParams struct {
	ThreadID        string  `json:"threadId"`
	TurnID          *string `json:"turnId"`
	ServerName      string  `json:"serverName"`
	Mode            string  `json:"mode" wire:"optional"`
	Message         string  `json:"message" wire:"optional"`
	RequestedSchema any     `json:"requestedSchema" wire:"optional"`
	Meta            any     `json:"_meta,omitempty" wire:"optional"`
}

// McpServerElicitationRequestResponse is the user's answer.
type McpServerElicitationRequestResponse struct {
	Action  McpServerElicitationAction `json:"action"`
	Content any                        `json:"content" wire:"optional"`
	Meta    any                        `json:"_meta" wire:"optional"`
}

// McpServerElicitationAction is what the user did with an elicitation.
type McpServerElicitationAction string

// Elicitation actions.
const (
	ElicitationAccept  McpServerElicitationAction = "accept"
	ElicitationDecline McpServerElicitationAction = "decline"
	ElicitationCancel  McpServerElicitationAction = "cancel"
)

func (McpServerElicitationAction) wireValues() []string {
	return values(ElicitationAccept, ElicitationDecline, ElicitationCancel)
}
