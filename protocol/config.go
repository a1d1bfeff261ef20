package protocol

// ConfigReadParams are the params of config/read.
type ConfigReadParams struct {
	Cwd           *string `json:"cwd,omitempty"`
	IncludeLayers bool    `json:"includeLayers,omitempty"`
}

// ConfigReadResponse is the result of config/read. Config is the effective
// configuration with snake_case keys, as in config.toml.
type ConfigReadResponse struct {
	Config  map[string]any                 `json:"config"`
	Origins map[string]ConfigLayerMetadata `json:"origins"`
	Layers  []ConfigLayer                  `json:"layers,omitempty"`
}

// ConfigLayerMetadata names a configuration layer and its version.
type ConfigLayerMetadata struct {
	Name    ConfigLayerSource `json:"name"`
	Version string            `json:"version"`
}

// ConfigLayer is one configuration layer (config/read includeLayers).
type ConfigLayer struct {
	Name           ConfigLayerSource `json:"name"`
	Version        string            `json:"version"`
	Config         any               `json:"config"`
	DisabledReason *string           `json:"disabledReason,omitempty"`
}

// ConfigLayerSource says where a configuration layer comes from, tagged by "type".
type ConfigLayerSource struct {
	PackagedDefaults                *ConfigFile       `variant:"packagedDefaults"`
	Mdm                             *MdmSource        `variant:"mdm"`
	System                          *ConfigFile       `variant:"system"`
	EnterpriseManaged               *EnterpriseSource `variant:"enterpriseManaged"`
	User                            *UserConfigSource `variant:"user"`
	Project                         *ProjectSource    `variant:"project"`
	SessionFlags                    *Empty            `variant:"sessionFlags"`
	LegacyManagedConfigTomlFromFile *ConfigFile       `variant:"legacyManagedConfigTomlFromFile"`
	LegacyManagedConfigTomlFromMdm  *Empty            `variant:"legacyManagedConfigTomlFromMdm"`
}

// MarshalJSON encodes the union (see union.go).
func (s ConfigLayerSource) MarshalJSON() ([]byte, error) { return marshalUnion(&s) }

// UnmarshalJSON decodes the union (see union.go).
func (s *ConfigLayerSource) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, s) }

// ConfigFile is a layer read from a file.
type ConfigFile struct {
	File AbsPath `json:"file"`
}

// UserConfigSource is the user's config.toml, possibly a profile of it.
type UserConfigSource struct {
	File    AbsPath `json:"file"`
	Profile *string `json:"profile"`
}

// MdmSource is a managed-device setting.
type MdmSource struct {
	Domain string `json:"domain"`
	Key    string `json:"key"`
}

// EnterpriseSource is enterprise-managed configuration.
type EnterpriseSource struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ProjectSource is a project's .codex folder.
type ProjectSource struct {
	DotCodexFolder AbsPath `json:"dotCodexFolder"`
}

// ConfigValueWriteParams are the params of config/value/write.
type ConfigValueWriteParams struct {
	KeyPath         string        `json:"keyPath"`
	Value           any           `json:"value"`
	MergeStrategy   MergeStrategy `json:"mergeStrategy"`
	FilePath        *string       `json:"filePath,omitempty"`
	ExpectedVersion *string       `json:"expectedVersion,omitempty"`
}

// ConfigBatchWriteParams are the params of config/batchWrite.
type ConfigBatchWriteParams struct {
	Edits            []ConfigEdit `json:"edits"`
	FilePath         *string      `json:"filePath,omitempty"`
	ExpectedVersion  *string      `json:"expectedVersion,omitempty"`
	ReloadUserConfig bool         `json:"reloadUserConfig,omitempty"`
}

// ConfigEdit is one edit of config/batchWrite.
type ConfigEdit struct {
	KeyPath       string        `json:"keyPath"`
	Value         any           `json:"value"`
	MergeStrategy MergeStrategy `json:"mergeStrategy"`
}

// MergeStrategy says how a written value combines with the old one.
type MergeStrategy string

// Merge strategies.
const (
	MergeReplace MergeStrategy = "replace"
	MergeUpsert  MergeStrategy = "upsert"
)

func (MergeStrategy) wireValues() []string { return values(MergeReplace, MergeUpsert) }

// ConfigWriteResponse is the result of config/value/write and config/batchWrite.
type ConfigWriteResponse struct {
	Status             WriteStatus         `json:"status"`
	Version            string              `json:"version"`
	FilePath           AbsPath             `json:"filePath"`
	OverriddenMetadata *OverriddenMetadata `json:"overriddenMetadata"`
}

// WriteStatus says whether a written value is in effect.
type WriteStatus string

// Write states.
const (
	WriteOK           WriteStatus = "ok"
	WriteOKOverridden WriteStatus = "okOverridden"
)

func (WriteStatus) wireValues() []string { return values(WriteOK, WriteOKOverridden) }

// OverriddenMetadata says which layer overrides a written value.
type OverriddenMetadata struct {
	Message         string              `json:"message"`
	OverridingLayer ConfigLayerMetadata `json:"overridingLayer"`
	EffectiveValue  any                 `json:"effectiveValue"`
}

// ConfigRequirementsReadResponse is the result of configRequirements/read.
// Requirements is an object of managed constraints, or null when there are none.
type ConfigRequirementsReadResponse struct {
	Requirements                  map[string]any `json:"requirements" wire:"optional"`
	SupportsIndependentSpeedModes *bool          `json:"supportsIndependentSpeedModes"`
}
