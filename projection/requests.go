package projection

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/protocol"
)

func typeOf(v any) string { return reflect.TypeOf(v).String() }

// execApprovalParams builds a command approval request. Absent optional
// fields are left out, as the reference does for this request.
func execApprovalParams(threadID, turnID string, m core.ExecApprovalRequest) protocol.CommandExecutionRequestApprovalParams {
	kind := protocol.ApprovalKindCommand
	env := "local"
	cmd := policy.ShellQuote(m.Command)
	cwd := m.Cwd
	p := protocol.CommandExecutionRequestApprovalParams{
		Kind:           &kind,
		ThreadID:       threadID,
		TurnID:         turnID,
		ItemID:         m.CallID,
		EnvironmentID:  &env,
		Command:        &cmd,
		Cwd:            &cwd,
		CommandActions: []protocol.CommandAction(CommandActions(m.Actions)),
		Reason:         strPtr(m.Reason),
	}
	if len(m.ProposedAmendment) > 0 {
		p.ProposedExecpolicyAmendment = m.ProposedAmendment
	}
	for _, d := range m.AvailableDecisions {
		switch d {
		case core.DecisionAcceptWithAmendment:
			if len(m.ProposedAmendment) > 0 {
				p.AvailableDecisions = append(p.AvailableDecisions, protocol.CommandExecutionApprovalDecision{
					AcceptWithExecpolicyAmendment: &protocol.ExecpolicyAmendment{ExecpolicyAmendment: m.ProposedAmendment}})
			}
		case core.DecisionAccept, core.DecisionAcceptForSession, core.DecisionDecline, core.DecisionCancel:
			p.AvailableDecisions = append(p.AvailableDecisions, protocol.Decision(protocol.ApprovalDecision(d)))
		}
	}
	return p
}

// elicitationMethod is the server request for MCP tool approvals and MCP
// servers' forms.
const elicitationMethod = "mcpServer/elicitation/request"

// mcpApprovalParams asks to run an MCP tool the reference's way: a form
// with no fields, its _meta marking it a tool call approval
// (codex_approval_kind) with the tool's arguments, and the lifetimes an
// approval may be given ("persist" in the answer's _meta).
func mcpApprovalParams(threadID, turnID string, m core.McpToolApprovalRequest) protocol.McpServerElicitationRequestParams {
	meta := map[string]any{
		"codex_approval_kind": "mcp_tool_call",
		"persist":             []string{"session", "always"},
		"tool_name":           m.Tool,
		"tool_params":         rawOrNull(m.Arguments),
	}
	if m.Description != "" {
		meta["tool_description"] = m.Description
	}
	tid := turnID
	return protocol.McpServerElicitationRequestParams{
		ThreadID: threadID, TurnID: &tid, ServerName: m.Server, Mode: "form",
		Message:         "Allow the " + m.Server + " MCP server to run tool \"" + m.Tool + "\"?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		Meta:            meta,
	}
}

// Decode turns a client's answer to r into the core Op that carries it.
// rpcErr is the client's error answer, if it sent one: the item then
// fails (and the turn goes on).
func (r *Pending) Decode(result json.RawMessage, rpcErr error) (core.Op, error) {
	switch r.Kind {
	case ExecApproval, PatchApproval:
		d := core.Decision{Kind: core.DecisionFailed}
		if rpcErr != nil {
			d.Message = rpcErr.Error()
		} else {
			var err error
			if d, err = decodeDecision(r.Kind, result); err != nil {
				return nil, err
			}
		}
		if r.Kind == ExecApproval {
			return core.OpExecApproval{CallID: r.CallID, Decision: d}, nil
		}
		return core.OpPatchApproval{CallID: r.CallID, Decision: d}, nil
	case UserInputReq:
		if rpcErr != nil {
			return core.OpUserInputAnswer{CallID: r.CallID, Err: rpcErr.Error()}, nil
		}
		var resp protocol.ToolRequestUserInputResponse
		if err := json.Unmarshal(result, &resp); err != nil {
			return nil, fmt.Errorf("invalid requestUserInput answer: %w", err)
		}
		answers := map[string][]string{}
		for k, v := range resp.Answers {
			answers[k] = v.Answers
		}
		return core.OpUserInputAnswer{CallID: r.CallID, Answers: answers}, nil
	case DynamicToolReq:
		if rpcErr != nil {
			return core.OpDynamicToolResponse{CallID: r.CallID, Err: rpcErr.Error()}, nil
		}
		var resp protocol.DynamicToolCallResponse
		if err := json.Unmarshal(result, &resp); err != nil {
			return nil, fmt.Errorf("invalid item/tool/call answer: %w", err)
		}
		return core.OpDynamicToolResponse{CallID: r.CallID, Success: resp.Success, ContentItems: CoreDynamicContent(resp.ContentItems)}, nil
	case McpApprovalReq, McpElicitationReq:
		if rpcErr != nil {
			return core.OpMcpElicitationAnswer{CallID: r.CallID, Err: rpcErr.Error()}, nil
		}
		var resp struct {
			Action  protocol.McpServerElicitationAction `json:"action"`
			Content json.RawMessage                     `json:"content"`
			Meta    json.RawMessage                     `json:"_meta"`
		}
		if err := json.Unmarshal(result, &resp); err != nil {
			return nil, fmt.Errorf("invalid mcpServer/elicitation/request answer: %w", err)
		}
		switch resp.Action {
		case protocol.ElicitationAccept, protocol.ElicitationDecline, protocol.ElicitationCancel:
		default:
			return nil, fmt.Errorf("invalid mcpServer/elicitation/request answer: action %q is not one of accept, decline, cancel", resp.Action)
		}
		return core.OpMcpElicitationAnswer{CallID: r.CallID, Action: string(resp.Action), Content: resp.Content, Meta: resp.Meta}, nil
	}
	return nil, fmt.Errorf("unknown request kind %d", r.Kind)
}

func decodeDecision(kind RequestKind, result json.RawMessage) (core.Decision, error) {
	if kind == PatchApproval {
		var resp protocol.FileChangeRequestApprovalResponse
		if err := json.Unmarshal(result, &resp); err != nil {
			return core.Decision{}, fmt.Errorf("invalid fileChange approval answer: %w", err)
		}
		return core.Decision{Kind: core.DecisionKind(resp.Decision)}, nil
	}
	var resp protocol.CommandExecutionRequestApprovalResponse
	if err := json.Unmarshal(result, &resp); err != nil {
		return core.Decision{}, fmt.Errorf("invalid commandExecution approval answer: %w", err)
	}
	switch {
	case resp.Decision.AcceptWithExecpolicyAmendment != nil:
		return core.Decision{Kind: core.DecisionAcceptWithAmendment, ExecPolicyAmendment: resp.Decision.AcceptWithExecpolicyAmendment.ExecpolicyAmendment}, nil
	case resp.Decision.ApplyNetworkPolicyAmendment != nil:
		// Network policy amendments have no network proxy to apply to
		// here; the command is accepted once.
		return core.Decision{Kind: core.DecisionAccept}, nil
	}
	return core.Decision{Kind: core.DecisionKind(resp.Decision.Decision)}, nil
}
