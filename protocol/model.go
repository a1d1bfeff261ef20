package protocol

// ModelListParams are the params of model/list.
type ModelListParams struct {
	Cursor        *string `json:"cursor,omitempty"`
	Limit         *uint32 `json:"limit,omitempty"`
	IncludeHidden *bool   `json:"includeHidden,omitempty"`
	ModelProvider *string `json:"modelProvider,omitempty"`
}

// ModelListResponse is the result of model/list.
type ModelListResponse struct {
	Data       List[Model] `json:"data"`
	NextCursor *string     `json:"nextCursor"`
}

// Model is a catalog entry.
type Model struct {
	ID                        string                      `json:"id"`
	Model                     string                      `json:"model"`
	Upgrade                   *string                     `json:"upgrade"`
	UpgradeInfo               *ModelUpgradeInfo           `json:"upgradeInfo"`
	AvailabilityNux           *ModelAvailabilityNux       `json:"availabilityNux"`
	DisplayName               string                      `json:"displayName"`
	Description               string                      `json:"description"`
	ModelSpecialty            *string                     `json:"modelSpecialty"`
	Hidden                    bool                        `json:"hidden"`
	SupportedReasoningEfforts List[ReasoningEffortOption] `json:"supportedReasoningEfforts"`
	DefaultReasoningEffort    ReasoningEffort             `json:"defaultReasoningEffort"`
	InputModalities           List[InputModality]         `json:"inputModalities" wire:"optional"`
	SupportsPersonality       bool                        `json:"supportsPersonality" wire:"optional"`
	MultiAgentVersion         *MultiAgentVersion          `json:"multiAgentVersion"`
	AdditionalSpeedTiers      List[string]                `json:"additionalSpeedTiers" wire:"optional"`
	ServiceTiers              List[ModelServiceTier]      `json:"serviceTiers" wire:"optional"`
	DefaultServiceTier        *string                     `json:"defaultServiceTier"`
	AvailableAccessPrograms   *ModelAccessPrograms        `json:"availableAccessPrograms"`
	IsDefault                 bool                        `json:"isDefault"`
}

// ReasoningEffortOption is an effort a model supports.
type ReasoningEffortOption struct {
	ReasoningEffort ReasoningEffort `json:"reasoningEffort"`
	Description     string          `json:"description"`
}

// ModelUpgradeInfo points to a model's successor.
type ModelUpgradeInfo struct {
	Model             string  `json:"model"`
	UpgradeCopy       *string `json:"upgradeCopy"`
	ModelLink         *string `json:"modelLink"`
	MigrationMarkdown *string `json:"migrationMarkdown"`
	RetirementAt      *int64  `json:"retirementAt"`
}

// ModelAvailabilityNux is a promotional note about a model.
type ModelAvailabilityNux struct {
	Message string `json:"message"`
}

// ModelServiceTier is a service tier a model offers.
type ModelServiceTier struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ModelAccessPrograms lists the access programs a model is in.
type ModelAccessPrograms struct {
	Cyber List[CyberAccessProgram] `json:"cyber"`
}

// InputModality is a kind of input a model accepts.
type InputModality string

// Input modalities.
const (
	ModalityText  InputModality = "text"
	ModalityImage InputModality = "image"
	ModalityAudio InputModality = "audio"
)

func (InputModality) wireValues() []string { return values(ModalityText, ModalityImage, ModalityAudio) }

// MultiAgentVersion is a model's multi-agent support.
type MultiAgentVersion string

// Multi-agent versions.
const (
	MultiAgentDisabled MultiAgentVersion = "disabled"
	MultiAgentV1       MultiAgentVersion = "v1"
	MultiAgentV2       MultiAgentVersion = "v2"
)

func (MultiAgentVersion) wireValues() []string {
	return values(MultiAgentDisabled, MultiAgentV1, MultiAgentV2)
}
