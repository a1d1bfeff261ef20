package threads

import (
	"context"

	"github.com/agentd-dev/agentd/server/rpc"

	"github.com/google/uuid"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
)

func configRequirementsRead(context.Context, *rpc.Request, *protocol.Empty) (*protocol.ConfigRequirementsReadResponse, error) {
	return ConfigRequirements(), nil
}

// ConfigRequirements is configRequirements/read's answer (and what
// --print-startup-config prints): agentd has no managed requirements.
func ConfigRequirements() *protocol.ConfigRequirementsReadResponse {
	return &protocol.ConfigRequirementsReadResponse{}
}

// hooksList: agentd runs no hooks.
func hooksList(_ context.Context, _ *rpc.Request, p *protocol.HooksListParams) (*protocol.HooksListResponse, error) {
	out := protocol.HooksListResponse{Data: protocol.List[protocol.HooksListEntry]{}}
	for _, cwd := range p.Cwds {
		out.Data = append(out.Data, protocol.HooksListEntry{Cwd: cwd, Hooks: protocol.List[any]{}, Warnings: protocol.List[string]{}, Errors: protocol.List[protocol.PathErrorInfo]{}})
	}
	return &out, nil
}

func checkGovCloudRequirements(context.Context, *rpc.Request, *protocol.Empty) (*protocol.BedrockCheckGovCloudRequirementsResponse, error) {
	return &protocol.BedrockCheckGovCloudRequirementsResponse{}, nil
}

func pluginInstalled(context.Context, *rpc.Request, *protocol.PluginInstalledParams) (*protocol.PluginInstalledResponse, error) {
	return &protocol.PluginInstalledResponse{Marketplaces: protocol.List[protocol.PluginMarketplaceEntry]{}, MarketplaceLoadErrors: protocol.List[protocol.MarketplaceLoadErrorInfo]{}}, nil
}

func threadGoalGet(context.Context, *rpc.Request, *protocol.ThreadIDParams) (*protocol.ThreadGoalGetResponse, error) {
	return &protocol.ThreadGoalGetResponse{}, nil
}

func backgroundTerminalsList(context.Context, *rpc.Request, *protocol.ThreadBackgroundTerminalsListParams) (*protocol.ThreadBackgroundTerminalsListResponse, error) {
	return &protocol.ThreadBackgroundTerminalsListResponse{Data: protocol.List[protocol.ThreadBackgroundTerminal]{}}, nil
}

// readStateUpdate: agentd keeps no read state, so every thread reads as
// fully read.
func readStateUpdate(context.Context, *rpc.Request, *protocol.ThreadReadStateUpdateParams) (*protocol.ThreadReadStateUpdateResponse, error) {
	return &protocol.ThreadReadStateUpdateResponse{ReadState: protocol.ThreadReadState{Revision: uuid.NewString()}}, nil
}

// modelList lists the models agentd can serve: the configured one and the
// built-in demo model (neither hidden), a page at a time (pageModels).
func (sv *service) modelList(_ context.Context, _ *rpc.Request, p *protocol.ModelListParams) (*protocol.ModelListResponse, error) {
	efforts := func(list ...string) protocol.List[protocol.ReasoningEffortOption] {
		out := protocol.List[protocol.ReasoningEffortOption]{}
		for _, e := range list {
			out = append(out, protocol.ReasoningEffortOption{ReasoningEffort: protocol.ReasoningEffort(e), Description: e + " reasoning effort"})
		}
		return out
	}
	entry := func(name, display, desc string, def bool, effs protocol.List[protocol.ReasoningEffortOption], defEffort string, modalities ...protocol.InputModality) protocol.Model {
		return protocol.Model{
			ID: name, Model: name, DisplayName: display, Description: desc,
			SupportedReasoningEfforts: effs, DefaultReasoningEffort: protocol.ReasoningEffort(defEffort),
			InputModalities: protocol.List[protocol.InputModality](modalities), IsDefault: def,
		}
	}
	text, image := protocol.InputModality("text"), protocol.InputModality("image")
	cfg := sv.config()
	data := protocol.List[protocol.Model]{}
	if cfg.Model != config.DemoModel {
		// Images are passed to it (docs/protocol.md, Images): clients
		// offer to attach them only to a model that takes them.
		data = append(data, entry(cfg.Model, cfg.Model, "The configured model ("+cfg.Provider.Name+")", true, efforts("low", "medium", "high"), "medium", text, image))
	}
	data = append(data, entry(config.DemoModel, "Demo (offline)", "agentd's built-in offline demo model: try `run: CMD`, `patch: FILE TEXT`, `plan:`.",
		cfg.Model == config.DemoModel, efforts("medium"), "medium", text))
	return pageModels(data, p)
}

// permissionProfileList lists the built-in sandbox profiles.
func permissionProfileList(_ context.Context, _ *rpc.Request, _ *protocol.PermissionProfileListParams) (*protocol.PermissionProfileListResponse, error) {
	desc := func(s string) *string { return &s }
	return &protocol.PermissionProfileListResponse{Data: protocol.List[protocol.PermissionProfileSummary]{
		{ID: ":read-only", Description: desc("Commands may read files; writes need approval."), Allowed: true},
		{ID: ":workspace-write", Description: desc("Commands may write in the workspace and temp dirs."), Allowed: true},
		{ID: ":danger-full-access", Description: desc("No sandbox: commands can do anything you can."), Allowed: true},
	}}, nil
}

// threadSettingsUpdate changes the settings of a loaded thread's later
// turns.
func (sv *service) threadSettingsUpdate(ctx context.Context, r *rpc.Request, p *protocol.ThreadSettingsUpdateParams) (*protocol.Empty, error) {
	c := r.Conn()
	if err := sv.permitTurn(r, p.ApprovalPolicy, p.SandboxPolicy); err != nil {
		return nil, err
	}
	t, err := sv.loadedThread(ctx, c, p.ThreadID)
	if err != nil {
		return nil, err
	}
	tp := &protocol.TurnStartParams{Cwd: p.Cwd, ApprovalPolicy: p.ApprovalPolicy, SandboxPolicy: p.SandboxPolicy, Model: p.Model,
		Effort: p.Effort, Summary: p.Summary, CollaborationMode: p.CollaborationMode}
	ov, err := turnContextOverrides(tp, t.sess.TurnContext().Cwd)
	if err != nil {
		return nil, err
	}
	if err := sv.boundTurn(r, t, &ov); err != nil {
		return nil, err
	}
	if _, err := t.sess.Call(ctx, core.OpOverrideTurnContext{Overrides: ov}); err != nil {
		return nil, rejectErr(err)
	}
	return &protocol.Empty{}, nil
}
