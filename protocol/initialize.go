package protocol

// InitializeParams are the params of initialize.
type InitializeParams struct {
	ClientInfo   ClientInfo              `json:"clientInfo"`
	Capabilities *InitializeCapabilities `json:"capabilities,omitempty"`
}

// ClientInfo identifies the client; Name becomes the originator.
type ClientInfo struct {
	Name    string  `json:"name"`
	Title   *string `json:"title,omitempty"`
	Version string  `json:"version"`
}

// InitializeCapabilities are what the client opts into for the connection.
type InitializeCapabilities struct {
	ExperimentalAPI                bool           `json:"experimentalApi,omitempty"`
	OptOutNotificationMethods      []string       `json:"optOutNotificationMethods,omitempty"`
	RequestAttestation             bool           `json:"requestAttestation,omitempty"`
	RequiredHumanApproval          bool           `json:"requiredHumanApproval,omitempty"`
	ExplicitGatewayOauth           bool           `json:"explicitGatewayOauth,omitempty"`
	McpServerOpenaiFormElicitation bool           `json:"mcpServerOpenaiFormElicitation,omitempty"`
	Extensions                     map[string]any `json:"extensions,omitempty"`
}

// InitializeResponse is the result of initialize.
type InitializeResponse struct {
	UserAgent      string  `json:"userAgent"`
	CodexHome      AbsPath `json:"codexHome"`
	PlatformFamily string  `json:"platformFamily"`
	PlatformOs     string  `json:"platformOs"`
}
