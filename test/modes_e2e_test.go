package test

import (
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd-dev/agentd/schema/refschema"
	"github.com/agentd-dev/agentd/test/mockmodel"
)

// validTurn reads c's messages up to turn/completed and checks every
// notification and server message against the reference schema.
func validTurn(t *testing.T, c *Client) []Message {
	t.Helper()
	v := refschema.Validator(t)
	msgs := collectUntil(c, isMethod("turn/completed"))
	for _, m := range msgs {
		if m.Method == "" {
			continue
		}
		if err := v.ValidateServerMessage(m.Raw); err != nil {
			t.Fatalf("%s does not match the reference schema: %v\n%s", m.Method, err, m.Raw)
		}
	}
	return msgs
}

// itemEvents renders the item notifications of a turn as
// "started plan", "completed agentMessage", "plan delta", …
func itemEvents(t *testing.T, msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		switch m.Method {
		case "item/started", "item/completed":
			out = append(out, strings.TrimPrefix(m.Method, "item/")+" "+str(unmarshal(t, m.Params), "item", "type"))
		case "item/agentMessage/delta":
			out = append(out, "message delta")
		case "item/plan/delta":
			out = append(out, "plan delta")
		}
	}
	return out
}

// itemOf returns the item of the first method notification for an item of
// type typ.
func itemOf(t *testing.T, msgs []Message, method, typ string) map[string]any {
	t.Helper()
	for _, m := range msgs {
		if m.Method == method {
			if p := unmarshal(t, m.Params); str(p, "item", "type") == typ {
				return p["item"].(map[string]any)
			}
		}
	}
	t.Fatalf("no %s for a %s item in %v", method, typ, methods(msgs))
	return nil
}

// Plan mode end to end: the modes are listed; a turn in plan mode gives
// the model agentd's plan-mode instructions (once) and no update_plan;
// the <proposed_plan> block of its answer streams as a plan item whose
// deltas make its text, inside the agent message, which loses the block;
// the thread resumes in plan mode after a restart; switching back to the
// default mode tells the model, and a block is then plain text.
func TestPlanModeEndToEnd(t *testing.T) {
	planText := "# Plan\n- step one\n- step two\n"
	m := mockmodel.New(t)
	m.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.TextN("msg_1", mockmodel.ProposedPlan("Here is my plan.", planText), 7)),
		mockmodel.Reply("resp_2", mockmodel.Text("msg_2", "no plan this time")),
	)
	home := shortTempDir(t)
	work := t.TempDir()
	d := Start(t, Options{Home: home, ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", map[string]any{"experimentalApi": true})

	var list struct {
		Data []struct {
			Name            string  `json:"name"`
			Mode            *string `json:"mode"`
			Model           *string `json:"model"`
			ReasoningEffort *string `json:"reasoning_effort"`
		} `json:"data"`
	}
	validResult(t, "collaborationMode/list", c.Call("collaborationMode/list", map[string]any{}), &list)
	if len(list.Data) != 2 || list.Data[0].Name != "Plan" || *list.Data[0].Mode != "plan" || *list.Data[0].ReasoningEffort != "medium" ||
		list.Data[1].Name != "Default" || *list.Data[1].Mode != "default" || list.Data[1].ReasoningEffort != nil || list.Data[0].Model != nil {
		t.Fatalf("collaborationMode/list = %+v", list.Data)
	}

	id := startThread(t, c, map[string]any{"cwd": work})
	res := unmarshal(t, WantResult(t, c.Call("turn/start", map[string]any{"threadId": id, "input": textInput("plan it"),
		"collaborationMode": map[string]any{"mode": "plan", "settings": map[string]any{"model": "mock-model", "developer_instructions": nil}}})))
	turnID := str(res, "turn", "id")
	msgs := validTurn(t, c)
	want := []string{"started userMessage", "completed userMessage", "started agentMessage", "message delta",
		"started plan", "plan delta", "completed plan", "completed agentMessage"}
	if got := slices.Compact(itemEvents(t, msgs)); !slices.Equal(got, want) {
		t.Fatalf("items:\n got %v\nwant %v", got, want)
	}
	var deltas string
	for _, msg := range msgs {
		if msg.Method == "item/plan/delta" {
			p := unmarshal(t, msg.Params)
			if str(p, "itemId") != turnID+"-plan" {
				t.Fatalf("plan delta for %s", msg.Raw)
			}
			deltas += str(p, "delta")
		}
	}
	plan := itemOf(t, msgs, "item/completed", "plan")
	if plan["id"] != turnID+"-plan" || plan["text"] != planText || deltas != planText {
		t.Fatalf("plan item %v, deltas %q", plan, deltas)
	}
	if msg := itemOf(t, msgs, "item/completed", "agentMessage"); msg["text"] != "Here is my plan.\n" {
		t.Fatalf("agent message %v", msg)
	}
	req := m.Requests()[0]
	var modeMsgs []string
	for _, s := range req.MessageTexts("developer") {
		if strings.HasPrefix(s, "<collaboration_mode>") {
			modeMsgs = append(modeMsgs, s)
		}
	}
	tools := req.ToolNames()
	if len(modeMsgs) != 1 || !strings.Contains(modeMsgs[0], "<proposed_plan>") || slices.Contains(tools, "update_plan") || !slices.Contains(tools, "request_user_input") {
		t.Fatalf("plan-mode request: mode messages %q, tools %v", modeMsgs, tools)
	}

	// A restart: the thread resumes in plan mode, with agentd's text.
	c.Close()
	d.Signal(syscall.SIGTERM)
	d.Wait()
	d = Start(t, Options{Home: home, ConfigTOML: mockConfig(m, "")})
	c = d.Stdio()
	c.Initialize("e2e", map[string]any{"experimentalApi": true})
	var resumed struct {
		CollaborationMode struct {
			Mode     string `json:"mode"`
			Settings struct {
				Model                 string  `json:"model"`
				DeveloperInstructions *string `json:"developer_instructions"`
			} `json:"settings"`
		} `json:"collaborationMode"`
	}
	validResult(t, "thread/resume", c.Call("thread/resume", map[string]any{"threadId": id}), &resumed)
	cm := resumed.CollaborationMode
	if cm.Mode != "plan" || cm.Settings.Model != "mock-model" || cm.Settings.DeveloperInstructions == nil || !strings.HasPrefix(*cm.Settings.DeveloperInstructions, "# Collaboration mode: Plan") {
		t.Fatalf("resumed collaborationMode %+v", cm)
	}

	// Back to the default mode through thread/settings/update.
	WantResult(t, c.Call("thread/settings/update", map[string]any{"threadId": id,
		"collaborationMode": map[string]any{"mode": "default", "settings": map[string]any{"model": "mock-model"}}}))
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("now do it")})
	msgs = validTurn(t, c)
	for _, e := range itemEvents(t, msgs) {
		if strings.HasSuffix(e, "plan") {
			t.Fatalf("a plan item in the default mode: %v", itemEvents(t, msgs))
		}
	}
	req = m.Requests()[1]
	modeMsgs = modeMsgs[:0]
	for _, s := range req.MessageTexts("developer") {
		if strings.HasPrefix(s, "<collaboration_mode>") {
			modeMsgs = append(modeMsgs, s)
		}
	}
	if len(modeMsgs) != 2 || !strings.HasPrefix(modeMsgs[1], "<collaboration_mode># Collaboration mode: Default") || !slices.Contains(req.ToolNames(), "update_plan") {
		t.Fatalf("default-mode request: mode messages %d (%.60q), tools %v", len(modeMsgs), modeMsgs, req.ToolNames())
	}
	validResult(t, "thread/resume", c.Call("thread/resume", map[string]any{"threadId": id}), &resumed)
	if resumed.CollaborationMode.Mode != "default" {
		t.Fatalf("resumed after the switch: %+v", resumed.CollaborationMode)
	}
}

// A thread whose client never chose a mode resumes in the default mode
// with no instructions, as the reference reports it.
func TestResumeReportsDefaultMode(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "hi")))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	c.Request("turn/start", map[string]any{"threadId": id, "input": textInput("hi")})
	validTurn(t, c)
	res := unmarshal(t, validResult(t, "thread/resume", c.Call("thread/resume", map[string]any{"threadId": id}), nil))
	if cm := path(res, "collaborationMode"); path(cm, "mode") != "default" || path(cm, "settings", "developer_instructions") != nil || path(cm, "settings", "model") != "mock-model" {
		t.Fatalf("collaborationMode %v", cm)
	}
	for _, s := range m.Requests()[0].MessageTexts("developer") {
		if strings.Contains(s, "<collaboration_mode>") {
			t.Fatalf("the model was told about a mode nobody chose: %q", s)
		}
	}
}
