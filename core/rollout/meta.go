package rollout

import (
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
)

// FormatVersion is written in every session_meta record. Readers accept any
// version and skip what they do not know.
const FormatVersion = 1

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
}

// Compaction replaces the model history: after it, the history is
// ReplacementHistory followed by whatever is recorded later.
type Compaction struct {
	// Message is the summary text, for people reading the file.
	Message            string
	ReplacementHistory []model.ResponseItem
}

type wireMeta struct {
	ID                    string    `json:"id"`
	CreatedAt             time.Time `json:"createdAt"`
	Cwd                   string    `json:"cwd"`
	ModelProvider         string    `json:"modelProvider"`
	Model                 string    `json:"model,omitempty"`
	Effort                string    `json:"reasoningEffort,omitempty"`
	Source                string    `json:"source,omitempty"`
	ThreadSource          string    `json:"threadSource,omitempty"`
	Originator            string    `json:"originator,omitempty"`
	CLIVersion            string    `json:"cliVersion,omitempty"`
	Git                   *wireGit  `json:"git,omitempty"`
	ForkedFromID          string    `json:"forkedFromId,omitempty"`
	Ephemeral             bool      `json:"ephemeral"`
	BaseInstructions      string    `json:"baseInstructions,omitempty"`
	DeveloperInstructions string    `json:"developerInstructions,omitempty"`
	Format                int       `json:"format"`
}

type wireGit struct {
	SHA       string `json:"sha,omitempty"`
	Branch    string `json:"branch,omitempty"`
	OriginURL string `json:"originUrl,omitempty"`
}

func metaToWire(m SessionMeta) wireMeta {
	w := wireMeta{
		ID: m.ID, CreatedAt: m.CreatedAt.UTC(), Cwd: m.Cwd, ModelProvider: m.ModelProvider, Model: m.Model,
		Effort: m.Effort, Source: m.Source, ThreadSource: m.ThreadSource, Originator: m.Originator,
		CLIVersion: m.CLIVersion, ForkedFromID: m.ForkedFromID, BaseInstructions: m.BaseInstructions,
		DeveloperInstructions: m.DeveloperInstructions, Format: FormatVersion,
	}
	if m.Git != nil {
		w.Git = &wireGit{SHA: m.Git.SHA, Branch: m.Git.Branch, OriginURL: m.Git.OriginURL}
	}
	return w
}

func (w wireMeta) meta() SessionMeta {
	m := SessionMeta{
		ID: w.ID, CreatedAt: w.CreatedAt, Cwd: w.Cwd, ModelProvider: w.ModelProvider, Model: w.Model,
		Effort: w.Effort, Source: w.Source, ThreadSource: w.ThreadSource, Originator: w.Originator,
		CLIVersion: w.CLIVersion, ForkedFromID: w.ForkedFromID, BaseInstructions: w.BaseInstructions,
		DeveloperInstructions: w.DeveloperInstructions,
	}
	if w.Git != nil {
		m.Git = &GitInfo{SHA: w.Git.SHA, Branch: w.Git.Branch, OriginURL: w.Git.OriginURL}
	}
	return m
}

type wireTurnContext struct {
	Cwd            string      `json:"cwd"`
	Model          string      `json:"model"`
	Effort         string      `json:"effort,omitempty"`
	Summary        string      `json:"summary,omitempty"`
	ApprovalPolicy string      `json:"approvalPolicy,omitempty"`
	Sandbox        wireSandbox `json:"sandbox"`
}

type wireSandbox struct {
	Mode                string   `json:"mode"`
	WritableRoots       []string `json:"writableRoots,omitempty"`
	NetworkAccess       bool     `json:"networkAccess,omitempty"`
	ExcludeTmpdirEnvVar bool     `json:"excludeTmpdirEnvVar,omitempty"`
	ExcludeSlashTmp     bool     `json:"excludeSlashTmp,omitempty"`
}

func turnContextToWire(tc TurnContext) wireTurnContext {
	return wireTurnContext{
		Cwd: tc.Cwd, Model: tc.Model, Effort: tc.Effort, Summary: tc.Summary,
		ApprovalPolicy: string(tc.ApprovalPolicy),
		Sandbox: wireSandbox{
			Mode: string(tc.Sandbox.Mode), WritableRoots: tc.Sandbox.WritableRoots,
			NetworkAccess: tc.Sandbox.NetworkAccess, ExcludeTmpdirEnvVar: tc.Sandbox.ExcludeTmpdirEnvVar,
			ExcludeSlashTmp: tc.Sandbox.ExcludeSlashTmp,
		},
	}
}

func (w wireTurnContext) turnContext() TurnContext {
	return TurnContext{
		Cwd: w.Cwd, Model: w.Model, Effort: w.Effort, Summary: w.Summary,
		ApprovalPolicy: policy.ApprovalPolicy(w.ApprovalPolicy),
		Sandbox: policy.SandboxPolicy{
			Mode: policy.SandboxMode(w.Sandbox.Mode), WritableRoots: w.Sandbox.WritableRoots,
			NetworkAccess: w.Sandbox.NetworkAccess, ExcludeTmpdirEnvVar: w.Sandbox.ExcludeTmpdirEnvVar,
			ExcludeSlashTmp: w.Sandbox.ExcludeSlashTmp,
		},
	}
}

type wireThreadName struct {
	Name string `json:"name"`
}

type wireRollback struct {
	NumTurns int `json:"numTurns"`
}

type wireCompacted struct {
	Message            string               `json:"message,omitempty"`
	ReplacementHistory []model.ResponseItem `json:"replacementHistory"`
}
