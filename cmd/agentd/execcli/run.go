package execcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/inprocess"
)

// Spec is one exec run.
type Spec struct {
	// Prompt is the user's message; Images are local image paths sent
	// with it.
	Prompt string
	Images []string
	// OutputSchema, when set, is the JSON Schema the final message must
	// follow (--output-schema).
	OutputSchema json.RawMessage
	// Cwd is the thread's working directory (absolute).
	Cwd string
	// Model, Sandbox and Approval override the configuration's when set.
	Model, Sandbox, Approval string
	// Config holds -c overrides sent to a remote daemon with the thread
	// (in process they are part of the configuration already).
	Config map[string]any
	// Ephemeral threads are not recorded.
	Ephemeral bool
	// ResumeID resumes that thread; ResumeLast the latest one (in Cwd
	// unless ResumeAll).
	ResumeID              string
	ResumeLast, ResumeAll bool
	// JSON prints the JSONL event stream instead of a transcript.
	JSON bool
	// LastMessageFile receives the final message of a completed turn.
	LastMessageFile string
	// Version names agentd in the transcript's header.
	Version string
}

// Conn is the connection exec runs over: an in-process client or one of
// a running daemon (both *inprocess.Client).
type Conn interface {
	Request(ctx context.Context, method string, params, result any) error
	Events() <-chan inprocess.Event
}

// threadInfo is what the transcript's header shows.
type threadInfo struct {
	ID, Model, Provider, Cwd, Approval, Sandbox, Effort string
}

// outcome is how the turn ended.
type outcome struct {
	status     string // completed, failed, interrupted
	errMessage string
	// items are the turn's items as turn/completed carries them.
	items []wireItem
}

// sink is where a run is shown: the JSONL stream or the transcript.
type sink interface {
	threadStarted(info threadInfo, prompt string)
	notification(method string, params json.RawMessage)
	warning(msg string)
	finish(o outcome)
}

// ErrTurnFailed is returned when the turn failed or was interrupted; what
// went wrong has been shown already.
var ErrTurnFailed = errors.New("the turn did not complete")

// Run runs one turn as spec says, showing it on stdout and stderr. It
// returns nil when the turn completed, ErrTurnFailed when it failed or
// was interrupted (shown already), or another error that the caller
// prints. Cancelling ctx interrupts the turn; Run then waits for its end.
func Run(ctx context.Context, c Conn, spec Spec, stdout, stderr io.Writer) error {
	var out sink
	if spec.JSON {
		out = newJSONLSink(stdout)
	} else {
		out = newHumanSink(stderr, spec.Version)
	}
	// Requests are not cancelled with ctx: a signal interrupts the turn,
	// it does not abandon the thread half-made.
	rctx := context.WithoutCancel(ctx)
	info, err := openThread(rctx, c, spec)
	if err != nil {
		return err
	}
	out.threadStarted(info, spec.Prompt)
	var started struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := c.Request(rctx, "turn/start", turnParams(info.ID, spec), &started); err != nil {
		return requestError("turn/start", err)
	}
	o, final, err := follow(ctx, c, info.ID, started.Turn.ID, out)
	if err != nil {
		return err
	}
	out.finish(o)
	if o.status != "completed" {
		return ErrTurnFailed
	}
	if spec.LastMessageFile != "" {
		if err := os.WriteFile(spec.LastMessageFile, []byte(final), 0o644); err != nil {
			out.warning(fmt.Sprintf("Failed to write last message file %s: %v", spec.LastMessageFile, err))
		}
	}
	if !spec.JSON && final != "" {
		fmt.Fprintln(stdout, final)
	}
	return nil
}

// openThread starts the thread, or resumes the one asked for.
func openThread(ctx context.Context, c Conn, spec Spec) (threadInfo, error) {
	params := map[string]any{"cwd": spec.Cwd}
	if spec.Model != "" {
		params["model"] = spec.Model
	}
	if spec.Sandbox != "" {
		params["sandbox"] = spec.Sandbox
	}
	if spec.Approval != "" {
		params["approvalPolicy"] = spec.Approval
	}
	if len(spec.Config) > 0 {
		params["config"] = spec.Config
	}
	method := "thread/start"
	if spec.ResumeID != "" || spec.ResumeLast {
		id := spec.ResumeID
		if id == "" {
			var err error
			if id, err = lastThread(ctx, c, spec); err != nil {
				return threadInfo{}, err
			}
		}
		method = "thread/resume"
		params["threadId"] = id
		params["excludeTurns"] = true
	} else if spec.Ephemeral {
		params["ephemeral"] = true
	}
	var res struct {
		Thread struct {
			ID  string `json:"id"`
			Cwd string `json:"cwd"`
		} `json:"thread"`
		Model           string          `json:"model"`
		ModelProvider   string          `json:"modelProvider"`
		ApprovalPolicy  json.RawMessage `json:"approvalPolicy"`
		Sandbox         json.RawMessage `json:"sandbox"`
		ReasoningEffort *string         `json:"reasoningEffort"`
	}
	if err := c.Request(ctx, method, params, &res); err != nil {
		return threadInfo{}, requestError(method, err)
	}
	info := threadInfo{ID: res.Thread.ID, Model: res.Model, Provider: res.ModelProvider, Cwd: res.Thread.Cwd,
		Approval: policyText(res.ApprovalPolicy), Sandbox: sandboxText(res.Sandbox), Effort: "none"}
	if res.ReasoningEffort != nil {
		info.Effort = *res.ReasoningEffort
	}
	return info, nil
}

// lastThread is the most recently updated thread (in spec.Cwd unless
// ResumeAll).
func lastThread(ctx context.Context, c Conn, spec Spec) (string, error) {
	params := map[string]any{"limit": 1, "sortKey": "updated_at"}
	if !spec.ResumeAll {
		params["cwd"] = spec.Cwd
	}
	var res struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := c.Request(ctx, "thread/list", params, &res); err != nil {
		return "", requestError("thread/list", err)
	}
	if len(res.Data) == 0 {
		if spec.ResumeAll {
			return "", errors.New("no recorded session to resume")
		}
		return "", fmt.Errorf("no recorded session to resume in %s (--all looks in every directory)", spec.Cwd)
	}
	return res.Data[0].ID, nil
}

func turnParams(threadID string, spec Spec) map[string]any {
	input := []any{map[string]any{"type": "text", "text": spec.Prompt, "text_elements": []any{}}}
	for _, img := range spec.Images {
		input = append(input, map[string]any{"type": "localImage", "path": img})
	}
	p := map[string]any{"threadId": threadID, "input": input}
	if len(spec.OutputSchema) > 0 {
		p["outputSchema"] = spec.OutputSchema
	}
	return p
}

// follow shows the turn's events until it ends, answering the server's
// requests on the way (there is no user to ask). It returns the outcome
// and the final message.
func follow(ctx context.Context, c Conn, threadID, turnID string, out sink) (outcome, string, error) {
	var final string
	interrupted := false
	done := ctx.Done()
	for {
		select {
		case <-done:
			// Once: the turn is asked to stop, and its end still awaited.
			done, interrupted = nil, true
			go func() {
				_ = c.Request(context.WithoutCancel(ctx), "turn/interrupt", map[string]any{"threadId": threadID, "turnId": turnID}, nil)
			}()
		case ev, ok := <-c.Events():
			if !ok {
				return outcome{}, "", errors.New("the connection to the server ended before the turn did")
			}
			if ev.Request != nil {
				answer(ctx, ev, out)
				continue
			}
			if !ours(ev.Params, threadID) {
				continue
			}
			switch ev.Method {
			case "item/completed":
				var p struct{ Item wireItem }
				if json.Unmarshal(ev.Params, &p) == nil && p.Item.Type == "agentMessage" {
					final = p.Item.Text
				}
			case "turn/completed":
				var p struct {
					Turn struct {
						ID     string         `json:"id"`
						Status string         `json:"status"`
						Error  *wireTurnError `json:"error"`
						Items  []wireItem     `json:"items"`
					} `json:"turn"`
				}
				if json.Unmarshal(ev.Params, &p) != nil || p.Turn.ID != turnID {
					break
				}
				o := outcome{status: p.Turn.Status, items: p.Turn.Items}
				if p.Turn.Error != nil {
					o.errMessage = withDetails(p.Turn.Error.Message, p.Turn.Error.AdditionalDetails)
				}
				if m := finalMessage(p.Turn.Items); m != "" {
					final = m
				}
				if interrupted && o.status == "completed" {
					o.status = "interrupted"
				}
				return o, final, nil
			}
			out.notification(ev.Method, ev.Params)
		}
	}
}

// ours says whether a notification is about the thread (or about no
// thread in particular).
func ours(params json.RawMessage, threadID string) bool {
	var p struct {
		ThreadID *string `json:"threadId"`
	}
	if json.Unmarshal(params, &p) != nil || p.ThreadID == nil {
		return true
	}
	return *p.ThreadID == threadID
}

// finalMessage is the turn's last agent message, else its last plan.
func finalMessage(items []wireItem) string {
	for _, typ := range []string{"agentMessage", "plan"} {
		for i := len(items) - 1; i >= 0; i-- {
			if items[i].Type == typ {
				return items[i].Text
			}
		}
	}
	return ""
}

// answer answers a server request without a user: approvals are declined
// (exec approves nothing it was not configured to allow), questions get
// no answers, other requests an error.
func answer(ctx context.Context, ev inprocess.Event, out sink) {
	rctx := context.WithoutCancel(ctx)
	var err error
	switch ev.Method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		out.warning(fmt.Sprintf("declined %s: agentd exec cannot ask for approval (set approval_policy or --sandbox instead)", ev.Method))
		err = ev.Request.Respond(rctx, map[string]any{"decision": "decline"})
	case "item/tool/requestUserInput":
		err = ev.Request.Respond(rctx, map[string]any{"answers": map[string]any{}})
	default:
		err = ev.Request.RespondError(rctx, protocol.Errorf(protocol.CodeMethodNotFound, "agentd exec does not handle %s", ev.Method))
	}
	if err != nil {
		out.warning(fmt.Sprintf("answering %s: %v", ev.Method, err))
	}
}

// requestError words a failed request for the user.
func requestError(method string, err error) error {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return fmt.Errorf("%s failed: %s", method, perr.Message)
	}
	return fmt.Errorf("%s failed: %w", method, err)
}

func policyText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

func sandboxText(raw json.RawMessage) string {
	var p struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &p) == nil && p.Type != "" {
		return map[string]string{"readOnly": "read-only", "workspaceWrite": "workspace-write", "dangerFullAccess": "danger-full-access"}[p.Type]
	}
	return ""
}
