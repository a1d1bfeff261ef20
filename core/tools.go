package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core/catalog"
	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/tools/exec"
	"github.com/agentd-dev/agentd/core/tools/patch"
)

// toolCall is one tool call the model made.
type toolCall struct {
	item      model.ResponseItem
	callID    string
	name      string
	namespace string
	// args is the function arguments (JSON text) or the custom tool input.
	args   string
	custom bool
	// maxTokens caps the text of the call's output (about four bytes a
	// token, head and tail kept); 0 leaves it to each tool.
	maxTokens int
	// deltas bounds the output the call's command streams.
	deltas deltaBudget
}

// newToolCall makes the call of item; its output is capped at maxTokens
// (tool_output_token_limit; 0 for none).
func newToolCall(item model.ResponseItem, maxTokens int) *toolCall {
	c := &toolCall{item: item, callID: item.CallID(), name: item.Name(), maxTokens: maxTokens}
	switch item.Type() {
	case model.TypeFunctionCall:
		var f model.FunctionCallFields
		_ = item.Decode(&f)
		c.args, c.namespace = f.Arguments, f.Namespace
	case model.TypeCustomToolCall:
		var f model.CustomToolCallFields
		_ = item.Decode(&f)
		c.args, c.custom = f.Input, true
	case model.TypeLocalShellCall:
		// The hosted local_shell tool: the item carries the action, and
		// its call_id (or, without one, its id) names the call.
		var f model.LocalShellCallFields
		_ = item.Decode(&f)
		c.name, c.args = exec.LocalShellTool, string(f.Action)
		if c.callID == "" {
			c.callID = item.ID()
		}
	}
	return c
}

// output builds the history item that answers the call, with the text
// cut to outputTokens.
func (c *toolCall) output(text string) model.ResponseItem {
	text = exec.TruncateForModel(text, c.outputTokens())
	if c.custom {
		return model.NewCustomToolCallOutput("", c.callID, text)
	}
	return model.NewFunctionCallOutput("", c.callID, text)
}

// outputTokens is how much of a call's output the model reads: maxTokens
// (tool_output_token_limit) when set. Otherwise a fifth more than the
// default tool output limit, as the reference allows when it records an
// output: the tools that cut their own output to the default (a command's,
// with its few lines of header) are left whole, and what comes from
// outside, a client's tool or an MCP resource, cannot fill the model's
// window.
func (c *toolCall) outputTokens() int {
	if c.maxTokens > 0 {
		return c.maxTokens
	}
	return exec.DefaultMaxOutputTokens * 6 / 5
}

// textBudget cuts the text parts of one output to a number of tokens in
// all (about exec.BytesPerToken bytes each); a part that finds less than a
// token left is dropped.
type textBudget int

func newTextBudget(maxTokens int) *textBudget {
	b := textBudget(maxTokens * exec.BytesPerToken)
	return &b
}

// cut returns text cut to what is left, head and tail kept, and false when
// nothing is left.
func (b *textBudget) cut(text string) (string, bool) {
	if *b < exec.BytesPerToken {
		// Less than a token left: nothing more (TruncateForModel would
		// read a limit of 0 tokens as its default).
		return "", false
	}
	if len(text) > int(*b) {
		text = exec.TruncateForModel(text, int(*b)/exec.BytesPerToken)
	}
	*b -= textBudget(len(text))
	return text, true
}

// toolHandler runs one call and returns its output item. It must return
// promptly once ctx is done.
type toolHandler func(ctx context.Context, t *turn, c *toolCall) model.ResponseItem

// toolRun is a started call; output is set before done is closed.
type toolRun struct {
	call   *toolCall
	output model.ResponseItem
	done   chan struct{}
}

// doneTool is a call answered without running anything.
func doneTool(c *toolCall, output model.ResponseItem) *toolRun {
	r := &toolRun{call: c, output: output, done: make(chan struct{})}
	close(r.done)
	return r
}

// startTool runs the call in its own goroutine, in parallel with the rest
// of the stream.
func (s *Session) startTool(t *turn, c *toolCall) *toolRun {
	r := &toolRun{call: c, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.output = s.dispatchTool(t, c)
	}()
	return r
}

// dispatchTool runs one call and logs it (debug) with the thread, turn,
// tool and call ids.
func (s *Session) dispatchTool(t *turn, c *toolCall) model.ResponseItem {
	log := t.log.With(zap.String("tool", c.name), zap.String("call", c.callID))
	log.Debug("tool call started")
	start := time.Now()
	out := s.runTool(t, c)
	log.Debug("tool call finished", zap.Duration("took", time.Since(start)))
	return out
}

// runTool runs a call by the tool it names: a client's dynamic tool, a
// built-in one, or none.
func (s *Session) runTool(t *turn, c *toolCall) model.ResponseItem {
	if spec, ok := s.dynamicTool(c); ok {
		return s.runDynamicTool(t.ctx, t, c, spec)
	}
	if tool, ok := s.mcpTool(c); ok {
		return s.runMCPTool(t.ctx, t, c, tool)
	}
	if out, ok := s.runResourceTool(t.ctx, c); ok {
		return out
	}
	if h, ok := s.tools[c.name]; ok && !(shellForms[c.name] && s.family(t).Shell == catalog.ShellDisabled) {
		return h(t.ctx, t, c)
	}
	return c.output(fmt.Sprintf("unsupported call: %s", c.name))
}

// shellForms are the tools that run commands. When the model's family
// has the shell disabled (features.shell_tool = false, or its catalogue
// entry), none of them runs, whatever the model calls.
var shellForms = map[string]bool{
	exec.ExecCommandTool: true, exec.WriteStdinTool: true, exec.ShellTool: true,
	exec.ShellCommandTool: true, exec.LocalShellTool: true,
}

// family is the tool family the turn's model is offered.
func (s *Session) family(t *turn) catalog.Tools {
	if s.cfg.ToolFamily != nil {
		return s.cfg.ToolFamily(t.model())
	}
	return catalog.Default
}

// builtinTools is the table of tools the core runs itself.
func (s *Session) builtinTools() map[string]toolHandler {
	return map[string]toolHandler{
		exec.ExecCommandTool:  s.runExecCommand,
		exec.WriteStdinTool:   s.runWriteStdin,
		exec.ShellTool:        s.runShell,
		exec.ShellCommandTool: s.runShellCommand,
		exec.LocalShellTool:   s.runLocalShell,
		patch.ToolName:        s.runApplyPatch,
		"update_plan":         s.runUpdatePlan,
		"request_user_input":  s.runRequestUserInput,
		viewImageTool:         s.runViewImage,
	}
}

// closeTools ends every command still running.
func (s *Session) closeTools() {
	if err := s.exec.mgr.Close(); err != nil {
		s.log.Warn("closing the command runtime", zap.Error(err))
	}
}

// toolSpecs lists the tools offered to the model for the turn: the shell
// family and apply_patch form its model is offered (Config.ToolFamily),
// the plan and question tools (no update_plan in plan mode nor for a
// reviewer), view_image, the client's dynamic tools, the MCP servers'
// tools and the hosted web search (Config.WebSearch; a reviewer has
// neither it nor view_image, as in the reference). Whatever is offered,
// every built-in form is run when the model calls it, unless the shell is
// disabled.
func (s *Session) toolSpecs(t *turn) []json.RawMessage {
	fam := s.family(t)
	var specs []json.RawMessage
	switch fam.Shell {
	case catalog.ShellUnifiedExec:
		specs = append(specs, exec.ExecCommandSpec(), exec.WriteStdinSpec())
	case catalog.ShellDefault:
		specs = append(specs, s.unlessDynamic(exec.ShellTool, exec.ShellSpec())...)
	case catalog.ShellCommand:
		specs = append(specs, s.unlessDynamic(exec.ShellCommandTool, exec.ShellCommandSpec())...)
	case catalog.ShellLocal:
		specs = append(specs, exec.LocalShellSpec())
	}
	switch fam.ApplyPatch {
	case catalog.ApplyPatchFreeform:
		specs = append(specs, patch.ToolSpecCustom())
	case catalog.ApplyPatchFunction:
		specs = append(specs, patch.ToolSpecFunction())
	}
	review := t.kind == TurnReview
	if !t.tc.Mode.Plan() && !review {
		// Plan mode ends in a proposed plan, not a progress list; a
		// reviewer reports its findings and keeps no plan.
		specs = append(specs, updatePlanSpec)
	}
	specs = append(specs, requestUserInputSpec)
	if !review {
		specs = append(specs, viewImageSpec)
	}
	for _, d := range s.cfg.DynamicTools {
		if d.DeferLoading {
			// Hidden from the model until it is loaded: the reference
			// offers it only through tool_search, which agentd has not.
			continue
		}
		specs = append(specs, d.spec())
	}
	specs = append(specs, s.mcpSpecs(t)...)
	if ws := s.webSearchSpec(t); ws != nil && !review {
		specs = append(specs, ws)
	}
	return specs
}

// unlessDynamic returns spec, or nothing when a dynamic tool of the
// client has that name (it takes the call, and a request must not name a
// tool twice). The other built-in names are refused as dynamic tools
// (ValidateDynamicTools).
func (s *Session) unlessDynamic(name string, spec json.RawMessage) []json.RawMessage {
	for _, d := range s.cfg.DynamicTools {
		if d.qualifiedName() == name {
			return nil
		}
	}
	return []json.RawMessage{spec}
}

var updatePlanSpec = json.RawMessage(`{"type":"function","name":"update_plan","description":"Record or revise your plan for the task as a short list of steps, each pending, in_progress or completed. Keep at most one step in_progress. The user sees the plan as it changes.","strict":false,"parameters":{"type":"object","properties":{"explanation":{"type":"string","description":"Why the plan changed, if it did."},"plan":{"type":"array","description":"The steps, in order.","items":{"type":"object","properties":{"step":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["step","status"],"additionalProperties":false}}},"required":["plan"],"additionalProperties":false}}`)

var requestUserInputSpec = json.RawMessage(`{"type":"function","name":"request_user_input","description":"Ask the user one or more questions and wait for the answers. Use it only when you cannot reasonably proceed without a decision from the user. Offer options when the likely answers are known.","strict":false,"parameters":{"type":"object","properties":{"questions":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string","description":"A short stable identifier for the question."},"header":{"type":"string","description":"A few words that label the question."},"question":{"type":"string"},"options":{"type":"array","items":{"type":"object","properties":{"label":{"type":"string"},"description":{"type":"string"}},"required":["label","description"],"additionalProperties":false}}},"required":["id","header","question"],"additionalProperties":false}}},"required":["questions"],"additionalProperties":false}}`)

func (s *Session) runUpdatePlan(ctx context.Context, t *turn, c *toolCall) model.ResponseItem {
	if t.tc.Mode.Plan() {
		return c.output("update_plan is not available in plan mode: write the finished plan in a <proposed_plan> block instead")
	}
	var args struct {
		Explanation string `json:"explanation"`
		Plan        []struct {
			Step   string `json:"step"`
			Status string `json:"status"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(c.args), &args); err != nil {
		return c.output("failed to parse update_plan arguments: " + err.Error())
	}
	plan := make([]PlanStep, 0, len(args.Plan))
	for _, p := range args.Plan {
		st := PlanStepStatus(p.Status)
		switch st {
		case PlanPending, PlanInProgress, PlanCompleted:
		default:
			return c.output(fmt.Sprintf("invalid step status %q: use pending, in_progress or completed", p.Status))
		}
		plan = append(plan, PlanStep{Step: p.Step, Status: st})
	}
	s.emit(t.subID, t.id, PlanUpdate{Explanation: args.Explanation, Plan: plan})
	return c.output("Plan updated")
}

func (s *Session) runRequestUserInput(ctx context.Context, t *turn, c *toolCall) model.ResponseItem {
	var args struct {
		Questions []struct {
			ID       string `json:"id"`
			Header   string `json:"header"`
			Question string `json:"question"`
			Options  []struct {
				Label       string `json:"label"`
				Description string `json:"description"`
			} `json:"options"`
		} `json:"questions"`
	}
	if err := json.Unmarshal([]byte(c.args), &args); err != nil {
		return c.output("failed to parse request_user_input arguments: " + err.Error())
	}
	if len(args.Questions) == 0 {
		return c.output("request_user_input needs at least one question")
	}
	qs := make([]Question, 0, len(args.Questions))
	for i, q := range args.Questions {
		id := q.ID
		if id == "" {
			id = fmt.Sprintf("q%d", i+1)
		}
		opts := make([]QuestionOption, 0, len(q.Options))
		for _, o := range q.Options {
			opts = append(opts, QuestionOption(o))
		}
		qs = append(qs, Question{ID: id, Header: q.Header, Question: q.Question, IsOther: true, Options: opts})
	}
	ch := t.await(c.callID)
	s.emit(t.subID, t.id, UserInputRequest{CallID: c.callID, Questions: qs})
	select {
	case v := <-ch:
		a := v.(OpUserInputAnswer)
		if a.Err != "" {
			return c.output("the user input request failed: " + a.Err)
		}
		type answer struct {
			Answers []string `json:"answers"`
		}
		out := struct {
			Answers map[string]answer `json:"answers"`
		}{Answers: map[string]answer{}}
		for k, v := range a.Answers {
			if v == nil {
				v = []string{}
			}
			out.Answers[k] = answer{v}
		}
		b, _ := json.Marshal(out)
		return c.output(string(b))
	case <-ctx.Done():
		t.forget(c.callID)
		return c.output("aborted: the turn was interrupted before the user answered")
	}
}

// DynamicToolSpec is a tool the client declared at thread start. The model
// calls it like any function; the client runs it.
type DynamicToolSpec struct {
	Name        string
	Namespace   string
	Description string
	InputSchema json.RawMessage
	// DeferLoading hides the tool from the model's tool list (the
	// reference loads such tools on demand, through a tool search). It
	// needs a namespace.
	DeferLoading bool
}

// DeferredWithoutNamespaceError refuses a dynamic tool with deferLoading
// and no namespace; its text is the reference's.
type DeferredWithoutNamespaceError struct{ Name string }

func (e *DeferredWithoutNamespaceError) Error() string {
	return "deferred dynamic tool must include a namespace: " + e.Name
}

// qualifiedName is the function name the model sees: namespaced tools are
// flattened to "<namespace>__<name>", which every Responses model accepts.
func (d DynamicToolSpec) qualifiedName() string {
	if d.Namespace == "" {
		return d.Name
	}
	return d.Namespace + "__" + d.Name
}

func (d DynamicToolSpec) spec() json.RawMessage {
	params := d.InputSchema
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	b, _ := json.Marshal(struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Strict      bool            `json:"strict"`
		Parameters  json.RawMessage `json:"parameters"`
	}{"function", d.qualifiedName(), d.Description, false, params})
	return b
}

// validToolName reports whether s is 1-64 ASCII letters, digits, '_' or
// '-'. (It was the regexp ^[a-zA-Z0-9_-]{1,64}$, whose compilation, the
// counted repetition unrolled, was the largest part of the package's
// initialization: see docs/performance.md, Daemon start.)
func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// reservedToolNames are the built-in tools a dynamic tool may not shadow.
var reservedToolNames = map[string]bool{
	"exec_command": true, "write_stdin": true, "apply_patch": true,
	"update_plan": true, "request_user_input": true, viewImageTool: true,
}

// cutName cuts a name a client sent that is not a valid tool name, for an
// error: a valid one is at most 64 bytes, and the error need not repeat
// more. (The server's echoes go through protocol.Cut, which core cannot
// import; the marker is the same.)
func cutName(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	k := n
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + "…[cut, " + strconv.Itoa(len(s)) + " bytes in all]"
}

// ValidateDynamicTools checks client-declared tools: valid names, object
// schemas, no duplicates, no clash with a built-in tool.
func ValidateDynamicTools(specs []DynamicToolSpec) error {
	seen := map[string]bool{}
	for i, d := range specs {
		if !validToolName(d.Name) {
			return fmt.Errorf("dynamicTools[%d]: invalid tool name %q: use 1-64 letters, digits, '_' or '-'", i, cutName(d.Name))
		}
		if d.Namespace != "" && !validToolName(d.Namespace) {
			return fmt.Errorf("dynamicTools[%d]: invalid namespace %q: use 1-64 letters, digits, '_' or '-'", i, cutName(d.Namespace))
		}
		q := d.qualifiedName()
		if len(q) > 64 {
			return fmt.Errorf("dynamicTools[%d]: %q is longer than 64 characters with its namespace", i, q)
		}
		if reservedToolNames[q] {
			return fmt.Errorf("dynamicTools[%d]: %q is the name of a built-in tool", i, q)
		}
		if seen[q] {
			return fmt.Errorf("dynamicTools[%d]: duplicate tool %q", i, q)
		}
		seen[q] = true
		if d.DeferLoading && d.Namespace == "" {
			return &DeferredWithoutNamespaceError{Name: cutName(d.Name)}
		}
		if len(d.InputSchema) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(d.InputSchema, &schema); err != nil {
				return fmt.Errorf("dynamicTools[%d] (%s): inputSchema must be a JSON object: %v", i, q, err)
			}
			if typ, ok := schema["type"]; ok && typ != "object" {
				return fmt.Errorf("dynamicTools[%d] (%s): inputSchema type must be \"object\", got %v", i, q, typ)
			}
		}
	}
	return nil
}

func (s *Session) dynamicTool(c *toolCall) (DynamicToolSpec, bool) {
	if c.item.Type() == model.TypeLocalShellCall {
		// The hosted tool's items are never a client's tool, whatever
		// its name.
		return DynamicToolSpec{}, false
	}
	for _, d := range s.cfg.DynamicTools {
		if c.namespace != "" {
			if d.Namespace == c.namespace && d.Name == c.name {
				return d, true
			}
			continue
		}
		if d.qualifiedName() == c.name {
			return d, true
		}
	}
	return DynamicToolSpec{}, false
}

func (s *Session) runDynamicTool(ctx context.Context, t *turn, c *toolCall, d DynamicToolSpec) model.ResponseItem {
	args := json.RawMessage(c.args)
	if !json.Valid(args) {
		args, _ = json.Marshal(c.args)
	}
	start := s.cfg.Now()
	item := DynamicToolCallItem{ID: c.callID, Tool: d.Name, Namespace: d.Namespace, Arguments: args, Status: StatusInProgress}
	s.emit(t.subID, t.id, ItemStarted{Item: item})
	ch := t.await(c.callID)
	s.emit(t.subID, t.id, DynamicToolCallRequest{CallID: c.callID, Tool: d.Name, Namespace: d.Namespace, Arguments: args})
	select {
	case v := <-ch:
		r := v.(OpDynamicToolResponse)
		dur := s.cfg.Now().Sub(start).Milliseconds()
		item.DurationMs = &dur
		success := r.Success && r.Err == ""
		item.Success = &success
		item.ContentItems = r.ContentItems
		item.Status = StatusCompleted
		if !success {
			item.Status = StatusFailed
		}
		s.emit(t.subID, t.id, ItemCompleted{Item: item})
		if r.Err != "" {
			return c.output("the client failed to run the tool: " + r.Err)
		}
		return dynamicToolOutput(c, r.ContentItems)
	case <-ctx.Done():
		t.forget(c.callID)
		return c.output("aborted: the turn was interrupted before the tool answered")
	}
}

// dynamicToolOutput turns a client's content items into the call output:
// plain text when there is only text, content parts otherwise.
func dynamicToolOutput(c *toolCall, items []DynamicContentItem) model.ResponseItem {
	textOnly := true
	var sb strings.Builder
	for _, it := range items {
		if it.Type != "inputText" {
			textOnly = false
			break
		}
		sb.WriteString(it.Text)
	}
	if textOnly || c.custom {
		return c.output(sb.String())
	}
	parts := make([]model.ContentPart, 0, len(items))
	budget := newTextBudget(c.outputTokens())
	for _, it := range items {
		switch it.Type {
		case "inputText":
			if text, ok := budget.cut(it.Text); ok {
				parts = append(parts, model.ContentPart{Type: "input_text", Text: text})
			}
		case "inputImage":
			parts = append(parts, model.ContentPart{Type: "input_image", ImageURL: it.ImageURL})
		}
	}
	return model.NewFunctionCallOutput("", c.callID, parts)
}
