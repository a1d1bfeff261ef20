package server

import (
	"context"

	"github.com/google/uuid"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
)

// registerClientSupportAPI registers what clients such as the Codex TUI
// call at startup. Features agentd does not have get an honest empty
// answer (no hooks, no skills, no plugins), never an invented one.
func (a *app) registerClientSupportAPI() {
	a.s.Handle("account/read", a.accountRead)
	a.s.Handle("model/list", a.modelList)
	a.s.Handle("config/read", a.configRead)
	a.s.Handle("configRequirements/read", func(context.Context, *Conn, any) (any, error) {
		return protocol.ConfigRequirementsReadResponse{}, nil
	})
	a.s.Handle("hooks/list", func(_ context.Context, _ *Conn, params any) (any, error) {
		p := params.(*protocol.HooksListParams)
		out := protocol.HooksListResponse{Data: protocol.List[protocol.HooksListEntry]{}}
		for _, cwd := range p.Cwds {
			out.Data = append(out.Data, protocol.HooksListEntry{Cwd: cwd, Hooks: protocol.List[any]{}, Warnings: protocol.List[string]{}, Errors: protocol.List[protocol.PathErrorInfo]{}})
		}
		return out, nil
	})
	a.s.Handle("skills/list", func(_ context.Context, _ *Conn, params any) (any, error) {
		p := params.(*protocol.SkillsListParams)
		out := protocol.SkillsListResponse{Data: protocol.List[protocol.SkillsListEntry]{}}
		for _, cwd := range p.Cwds {
			out.Data = append(out.Data, protocol.SkillsListEntry{Cwd: cwd, Skills: protocol.List[protocol.SkillMetadata]{}, Errors: protocol.List[protocol.PathErrorInfo]{}})
		}
		return out, nil
	})
	a.s.Handle("account/bedrock/checkGovCloudRequirements", func(context.Context, *Conn, any) (any, error) {
		return protocol.BedrockCheckGovCloudRequirementsResponse{}, nil
	})
	a.s.Handle("collaborationMode/list", func(context.Context, *Conn, any) (any, error) {
		return protocol.CollaborationModeListResponse{Data: protocol.List[protocol.CollaborationModeMask]{}}, nil
	})
	a.s.Handle("plugin/installed", func(context.Context, *Conn, any) (any, error) {
		return protocol.PluginInstalledResponse{Marketplaces: protocol.List[protocol.PluginMarketplaceEntry]{}, MarketplaceLoadErrors: protocol.List[protocol.MarketplaceLoadErrorInfo]{}}, nil
	})
	a.s.Handle("permissionProfile/list", a.permissionProfileList)
	a.s.Handle("mcpServerStatus/list", func(context.Context, *Conn, any) (any, error) {
		return protocol.ListMcpServerStatusResponse{Data: protocol.List[protocol.McpServerStatus]{}}, nil
	})
	a.s.Handle("thread/goal/get", func(_ context.Context, _ *Conn, params any) (any, error) {
		return protocol.ThreadGoalGetResponse{}, nil
	})
	a.s.Handle("thread/backgroundTerminals/list", func(context.Context, *Conn, any) (any, error) {
		return protocol.ThreadBackgroundTerminalsListResponse{Data: protocol.List[protocol.ThreadBackgroundTerminal]{}}, nil
	})
	a.s.Handle("thread/readState/update", func(_ context.Context, _ *Conn, params any) (any, error) {
		// agentd keeps no read state: every thread reads as fully read.
		return protocol.ThreadReadStateUpdateResponse{ReadState: protocol.ThreadReadState{Revision: uuid.NewString()}}, nil
	})
	a.s.Handle("thread/settings/update", a.threadSettingsUpdate)
}

func (a *app) accountRead(context.Context, *Conn, any) (any, error) {
	p := a.cfg.Provider
	resp := protocol.GetAccountResponse{RequiresOpenaiAuth: p.RequiresOpenAIAuth}
	if p.APIKey != "" {
		resp.Account = &protocol.Account{APIKey: &protocol.Empty{}}
	}
	return resp, nil
}

// modelList lists the models agentd can serve: the configured one and the
// built-in demo model.
func (a *app) modelList(context.Context, *Conn, any) (any, error) {
	efforts := func(list ...string) protocol.List[protocol.ReasoningEffortOption] {
		out := protocol.List[protocol.ReasoningEffortOption]{}
		for _, e := range list {
			out = append(out, protocol.ReasoningEffortOption{ReasoningEffort: protocol.ReasoningEffort(e), Description: e + " reasoning effort"})
		}
		return out
	}
	entry := func(name, display, desc string, def bool, effs protocol.List[protocol.ReasoningEffortOption], defEffort string) protocol.Model {
		return protocol.Model{
			ID: name, Model: name, DisplayName: display, Description: desc,
			SupportedReasoningEfforts: effs, DefaultReasoningEffort: protocol.ReasoningEffort(defEffort),
			InputModalities: protocol.List[protocol.InputModality]{protocol.InputModality("text")}, IsDefault: def,
		}
	}
	data := protocol.List[protocol.Model]{}
	if a.cfg.Model != config.DemoModel {
		data = append(data, entry(a.cfg.Model, a.cfg.Model, "The configured model ("+a.cfg.Provider.Name+")", true, efforts("low", "medium", "high"), "medium"))
	}
	data = append(data, entry(config.DemoModel, "Demo (offline)", "agentd's built-in offline demo model: try `run: CMD`, `patch: FILE TEXT`, `plan:`.",
		a.cfg.Model == config.DemoModel, efforts("medium"), "medium"))
	return protocol.ModelListResponse{Data: data}, nil
}

// configRead returns the effective configuration, with the reference's
// snake_case keys for what agentd supports.
func (a *app) configRead(context.Context, *Conn, any) (any, error) {
	c := a.cfg
	cfg := map[string]any{
		"model":           c.Model,
		"model_provider":  c.Provider.ID,
		"approval_policy": string(approvalToWire(c.ApprovalPolicy).Mode),
		"sandbox_mode":    string(c.Sandbox.Mode),
	}
	if c.ReasoningEffort != "" {
		cfg["model_reasoning_effort"] = c.ReasoningEffort
	}
	if c.ReasoningSummary != "" {
		cfg["model_reasoning_summary"] = c.ReasoningSummary
	}
	if c.Sandbox.Mode == policy.SandboxWorkspaceWrite {
		roots := []string{}
		roots = append(roots, c.Sandbox.WritableRoots...)
		cfg["sandbox_workspace_write"] = map[string]any{
			"writable_roots": roots, "network_access": c.Sandbox.NetworkAccess,
			"exclude_tmpdir_env_var": c.Sandbox.ExcludeTmpdirEnvVar, "exclude_slash_tmp": c.Sandbox.ExcludeSlashTmp,
		}
	}
	return protocol.ConfigReadResponse{Config: cfg, Origins: map[string]protocol.ConfigLayerMetadata{}}, nil
}

// permissionProfileList lists the built-in sandbox profiles.
func (a *app) permissionProfileList(context.Context, *Conn, any) (any, error) {
	desc := func(s string) *string { return &s }
	return protocol.PermissionProfileListResponse{Data: protocol.List[protocol.PermissionProfileSummary]{
		{ID: ":read-only", Description: desc("Commands may read files; writes need approval."), Allowed: true},
		{ID: ":workspace-write", Description: desc("Commands may write in the workspace and temp dirs."), Allowed: true},
		{ID: ":danger-full-access", Description: desc("No sandbox: commands can do anything you can."), Allowed: true},
	}}, nil
}

// threadSettingsUpdate changes the settings of a loaded thread's later
// turns.
func (a *app) threadSettingsUpdate(ctx context.Context, c *Conn, params any) (any, error) {
	p := params.(*protocol.ThreadSettingsUpdateParams)
	t, err := a.loadedThread(ctx, c, p.ThreadID)
	if err != nil {
		return nil, err
	}
	tp := &protocol.TurnStartParams{Cwd: p.Cwd, ApprovalPolicy: p.ApprovalPolicy, SandboxPolicy: p.SandboxPolicy, Model: p.Model}
	ov, err := turnContextOverrides(tp, t.sess.TurnContext().Cwd)
	if err != nil {
		return nil, err
	}
	if _, err := t.sess.Call(ctx, core.OpOverrideTurnContext{Overrides: ov}); err != nil {
		return nil, rejectErr(err)
	}
	return protocol.Empty{}, nil
}
