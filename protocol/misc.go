package protocol

// ListMcpServerStatusParams are the params of mcpServerStatus/list.
type ListMcpServerStatusParams struct {
	Cursor     *string                `json:"cursor,omitempty"`
	Limit      *uint32                `json:"limit,omitempty"`
	Detail     *McpServerStatusDetail `json:"detail,omitempty"`
	ServerName *string                `json:"serverName,omitempty"`
	ThreadID   *string                `json:"threadId,omitempty"`
}

// McpServerStatusDetail says how much mcpServerStatus/list reports.
type McpServerStatusDetail string

// Detail levels.
const (
	McpDetailFull             McpServerStatusDetail = "full"
	McpDetailToolsAndAuthOnly McpServerStatusDetail = "toolsAndAuthOnly"
)

func (McpServerStatusDetail) wireValues() []string {
	return values(McpDetailFull, McpDetailToolsAndAuthOnly)
}

// ListMcpServerStatusResponse is the result of mcpServerStatus/list.
type ListMcpServerStatusResponse struct {
	Data       List[McpServerStatus] `json:"data"`
	NextCursor *string               `json:"nextCursor"`
}

// McpServerStatus is the state of one MCP server.
type McpServerStatus struct {
	Name               string                     `json:"name"`
	AuthStatus         McpAuthStatus              `json:"authStatus"`
	Tools              map[string]McpTool         `json:"tools"`
	Resources          List[any]                  `json:"resources"`
	ResourceTemplates  List[any]                  `json:"resourceTemplates"`
	ServerInfo         any                        `json:"serverInfo" wire:"optional"`
	ServerCapabilities any                        `json:"serverCapabilities" wire:"optional"`
	RuntimeStatus      *McpServerConnectionStatus `json:"runtimeStatus"`
	ToolsError         *string                    `json:"toolsError"`
	HTTPOrigin         *string                    `json:"httpOrigin"`
	PluginID           *string                    `json:"pluginId"`
	ToolListMeta       any                        `json:"toolListMeta" wire:"optional"`
}

// McpServerConnectionStatus is where an MCP server's connection is.
type McpServerConnectionStatus string

// Connection states.
const (
	McpConnNotStarted             McpServerConnectionStatus = "notStarted"
	McpConnStarting               McpServerConnectionStatus = "starting"
	McpConnConnected              McpServerConnectionStatus = "connected"
	McpConnAuthenticationRequired McpServerConnectionStatus = "authenticationRequired"
	McpConnFailed                 McpServerConnectionStatus = "failed"
	McpConnCancelled              McpServerConnectionStatus = "cancelled"
	McpConnDisabled               McpServerConnectionStatus = "disabled"
)

func (McpServerConnectionStatus) wireValues() []string {
	return values(McpConnNotStarted, McpConnStarting, McpConnConnected, McpConnAuthenticationRequired, McpConnFailed, McpConnCancelled, McpConnDisabled)
}

// McpServerStatusUpdatedNotification reports an MCP server starting, ready
// or failed (mcpServer/startupStatus/updated).
type McpServerStatusUpdatedNotification struct {
	Name          string                         `json:"name"`
	Status        McpServerStartupState          `json:"status"`
	Error         *string                        `json:"error"`
	FailureReason *McpServerStartupFailureReason `json:"failureReason"`
	ThreadID      *string                        `json:"threadId"`
}

// McpServerStartupState is a step of an MCP server's start.
type McpServerStartupState string

// Startup states.
const (
	McpStartupStarting  McpServerStartupState = "starting"
	McpStartupReady     McpServerStartupState = "ready"
	McpStartupFailed    McpServerStartupState = "failed"
	McpStartupCancelled McpServerStartupState = "cancelled"
)

func (McpServerStartupState) wireValues() []string {
	return values(McpStartupStarting, McpStartupReady, McpStartupFailed, McpStartupCancelled)
}

// McpServerStartupFailureReason says why a start failed, when a client
// can act on it.
type McpServerStartupFailureReason string

// Failure reasons.
const McpReauthenticationRequired McpServerStartupFailureReason = "reauthenticationRequired"

func (McpServerStartupFailureReason) wireValues() []string {
	return values(McpReauthenticationRequired)
}

// McpToolCallProgressNotification is an MCP server's progress report for
// a running mcpToolCall item (item/mcpToolCall/progress).
type McpToolCallProgressNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	Message  string `json:"message"`
}

// McpResourceReadParams are the params of mcpServer/resource/read.
type McpResourceReadParams struct {
	Server       string  `json:"server"`
	URI          string  `json:"uri"`
	ThreadID     *string `json:"threadId,omitempty"`
	ConnectorID  *string `json:"connectorId,omitempty"`
	OriginCallID *string `json:"originCallId,omitempty"`
	Target       any     `json:"target,omitempty"`
	Meta         any     `json:"_meta,omitempty"`
}

// McpResourceReadResponse is the resource's contents, in the server's
// JSON (text or blob, with uri and mimeType).
type McpResourceReadResponse struct {
	Contents     List[any] `json:"contents"`
	OriginCallID *string   `json:"originCallId" wire:"optional"`
}

// McpServerToolCallParams are the params of mcpServer/tool/call: a
// client calls a tool itself.
type McpServerToolCallParams struct {
	ThreadID  string `json:"threadId"`
	Server    string `json:"server"`
	Tool      string `json:"tool"`
	Arguments any    `json:"arguments,omitempty"`
	Meta      any    `json:"_meta,omitempty"`
}

// McpServerToolCallResponse is the tool's result.
type McpServerToolCallResponse struct {
	Content           List[any] `json:"content"`
	StructuredContent any       `json:"structuredContent" wire:"optional"`
	IsError           *bool     `json:"isError" wire:"optional"`
	Meta              any       `json:"_meta" wire:"optional"`
}

// McpTool is a tool an MCP server offers.
type McpTool struct {
	Name         string  `json:"name"`
	Title        *string `json:"title"`
	Description  *string `json:"description"`
	InputSchema  any     `json:"inputSchema"`
	OutputSchema any     `json:"outputSchema" wire:"optional"`
	Annotations  any     `json:"annotations" wire:"optional"`
	Icons        []any   `json:"icons" wire:"optional"`
	Meta         any     `json:"_meta" wire:"optional"`
}

// McpAuthStatus is an MCP server's authentication state.
type McpAuthStatus string

// MCP auth states.
const (
	McpAuthUnknown     McpAuthStatus = "unknown"
	McpAuthUnsupported McpAuthStatus = "unsupported"
	McpAuthNotLoggedIn McpAuthStatus = "notLoggedIn"
	McpAuthBearerToken McpAuthStatus = "bearerToken"
	McpAuthOAuth       McpAuthStatus = "oAuth"
)

func (McpAuthStatus) wireValues() []string {
	return values(McpAuthUnknown, McpAuthUnsupported, McpAuthNotLoggedIn, McpAuthBearerToken, McpAuthOAuth)
}

// FuzzyFileSearchParams are the params of fuzzyFileSearch.
type FuzzyFileSearchParams struct {
	Query             string   `json:"query"`
	Roots             []string `json:"roots"`
	CancellationToken *string  `json:"cancellationToken,omitempty"`
}

// FuzzyFileSearchResponse is the result of fuzzyFileSearch.
type FuzzyFileSearchResponse struct {
	Files List[FuzzyFileSearchResult] `json:"files"`
}

// FuzzyFileSearchResult is one match (snake_case match_type and file_name).
type FuzzyFileSearchResult struct {
	Root      string                   `json:"root"`
	Path      string                   `json:"path"`
	MatchType FuzzyFileSearchMatchType `json:"match_type"`
	FileName  string                   `json:"file_name"`
	Score     uint32                   `json:"score"`
	Indices   []uint32                 `json:"indices" wire:"optional"`
}

// FuzzyFileSearchMatchType says whether a match is a file or a directory.
type FuzzyFileSearchMatchType string

// Match types.
const (
	MatchFile      FuzzyFileSearchMatchType = "file"
	MatchDirectory FuzzyFileSearchMatchType = "directory"
)

func (FuzzyFileSearchMatchType) wireValues() []string { return values(MatchFile, MatchDirectory) }

// HooksListParams are the params of hooks/list.
type HooksListParams struct {
	Cwds     []string `json:"cwds,omitempty"`
	ThreadID *string  `json:"threadId,omitempty"`
}

// HooksListResponse is the result of hooks/list.
type HooksListResponse struct {
	Data List[HooksListEntry] `json:"data"`
}

// HooksListEntry lists the hooks that apply in a directory. Hooks are
// opaque objects here.
type HooksListEntry struct {
	Cwd      string              `json:"cwd"`
	Hooks    List[any]           `json:"hooks"`
	Warnings List[string]        `json:"warnings"`
	Errors   List[PathErrorInfo] `json:"errors"`
}

// PathErrorInfo is a problem with a file.
type PathErrorInfo struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// SkillsListParams are the params of skills/list.
type SkillsListParams struct {
	Cwds        []string `json:"cwds,omitempty"`
	ForceReload bool     `json:"forceReload,omitempty"`
}

// SkillsListResponse is the result of skills/list.
type SkillsListResponse struct {
	Data List[SkillsListEntry] `json:"data"`
}

// SkillsListEntry lists the skills available in a directory.
type SkillsListEntry struct {
	Cwd    string              `json:"cwd"`
	Skills List[SkillMetadata] `json:"skills"`
	Errors List[PathErrorInfo] `json:"errors"`
}

// SkillMetadata describes a skill.
type SkillMetadata struct {
	Name             string     `json:"name"`
	Description      string     `json:"description"`
	ShortDescription *string    `json:"shortDescription,omitempty"`
	Interface        any        `json:"interface,omitempty" wire:"optional"`
	Dependencies     any        `json:"dependencies,omitempty" wire:"optional"`
	Path             string     `json:"path"`
	Scope            SkillScope `json:"scope"`
	Enabled          bool       `json:"enabled"`
	PluginID         *string    `json:"pluginId"`
}

// SkillsConfigWriteParams are the params of skills/config/write: a skill
// chosen by its SKILL.md path or by its name (exactly one), enabled or
// not.
type SkillsConfigWriteParams struct {
	Enabled bool    `json:"enabled"`
	Name    *string `json:"name"`
	Path    *string `json:"path"`
}

// SkillsConfigWriteResponse is the result of skills/config/write.
type SkillsConfigWriteResponse struct {
	EffectiveEnabled bool `json:"effectiveEnabled"`
}

// SkillScope is where a skill is defined.
type SkillScope string

// Skill scopes.
const (
	SkillUser   SkillScope = "user"
	SkillRepo   SkillScope = "repo"
	SkillSystem SkillScope = "system"
	SkillAdmin  SkillScope = "admin"
)

func (SkillScope) wireValues() []string { return values(SkillUser, SkillRepo, SkillSystem, SkillAdmin) }

// BedrockCheckGovCloudRequirementsResponse is the result of
// account/bedrock/checkGovCloudRequirements (experimental).
type BedrockCheckGovCloudRequirementsResponse struct {
	IsGovCloud bool `json:"isGovCloud"`
	ShouldWarn bool `json:"shouldWarn"`
}

// CollaborationModeListResponse is the result of collaborationMode/list (experimental).
type CollaborationModeListResponse struct {
	Data List[CollaborationModeMask] `json:"data"`
}

// CollaborationModeMask is a collaboration mode preset.
type CollaborationModeMask struct {
	Name            string           `json:"name"`
	Mode            *ModeKind        `json:"mode"`
	Model           *string          `json:"model"`
	ReasoningEffort *ReasoningEffort `json:"reasoning_effort"`
}

// PluginInstalledParams are the params of plugin/installed.
type PluginInstalledParams struct {
	Cwds                         []AbsPath `json:"cwds,omitempty"`
	InstallSuggestionPluginNames []string  `json:"installSuggestionPluginNames,omitempty"`
}

// PluginInstalledResponse is the result of plugin/installed.
type PluginInstalledResponse struct {
	Marketplaces          List[PluginMarketplaceEntry]   `json:"marketplaces"`
	MarketplaceLoadErrors List[MarketplaceLoadErrorInfo] `json:"marketplaceLoadErrors" wire:"optional"`
}

// PluginMarketplaceEntry is a plugin marketplace; Plugins are opaque objects here.
type PluginMarketplaceEntry struct {
	Name      string                `json:"name"`
	Path      *AbsPath              `json:"path"`
	Interface *MarketplaceInterface `json:"interface"`
	Plugins   List[any]             `json:"plugins"`
}

// MarketplaceInterface is how a marketplace is shown.
type MarketplaceInterface struct {
	DisplayName *string `json:"displayName"`
}

// MarketplaceLoadErrorInfo is a marketplace that failed to load.
type MarketplaceLoadErrorInfo struct {
	MarketplacePath AbsPath `json:"marketplacePath"`
	Message         string  `json:"message"`
}

// PermissionProfileListParams are the params of permissionProfile/list.
type PermissionProfileListParams struct {
	Cursor *string `json:"cursor,omitempty"`
	Limit  *uint32 `json:"limit,omitempty"`
	Cwd    *string `json:"cwd,omitempty"`
}

// PermissionProfileListResponse is the result of permissionProfile/list.
type PermissionProfileListResponse struct {
	Data       List[PermissionProfileSummary] `json:"data"`
	NextCursor *string                        `json:"nextCursor"`
}

// PermissionProfileSummary describes a permission profile.
type PermissionProfileSummary struct {
	ID          string  `json:"id"`
	Description *string `json:"description"`
	Allowed     bool    `json:"allowed"`
}
