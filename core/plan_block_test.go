package core

import (
	"cmp"
	"encoding/json"

	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core/model"
)

// joinSegs replays segments into the visible text and the plans.
func joinSegs(segs []planSeg) (visible string, plans []string, open bool) {
	for _, s := range segs {
		switch s.kind {
		case segText:
			visible += s.text
		case segPlanStart:
			plans = append(plans, "")
			open = true
		case segPlanText:
			plans[len(plans)-1] += s.text
		case segPlanEnd:
			open = false
		}
	}
	return visible, plans, open
}

// The splitter gives the same text and plans however the message is cut
// into deltas, and the same as splitPlans on the whole text.
func TestPlanSplitterAnySplit(t *testing.T) {
	cases := []struct {
		text, visible string
		plans         []string
	}{
		// The reference's observed example: the tag lines and their
		// newlines belong to neither part.
		{"Here is my plan.\n<proposed_plan>\n# Plan\n- step one\n- step two\n</proposed_plan>\n", "Here is my plan.\n", []string{"# Plan\n- step one\n- step two\n"}},
		{"no plan here\n", "no plan here\n", nil},
		{"mention <proposed_plan> inline\n", "mention <proposed_plan> inline\n", nil},
		{"<proposed_plan>\nA\n</proposed_plan>", "", []string{"A\n"}},
		{"  <proposed_plan>  \r\nA\r\n\t</proposed_plan>\r\nafter", "after", []string{"A\r\n"}},
		{"a\n<proposed_plan>\nunclosed", "a\n", []string{"unclosed"}},
		{"<proposed_plan>x\n", "<proposed_plan>x\n", nil},
		{"<proposed_plan>\n<proposed_plan>\n</proposed_plan>\n", "", []string{"<proposed_plan>\n"}},
		{"b\n<proposed_plan>\n1\n</proposed_plan>\nmid\n<proposed_plan>\n2\n</proposed_plan>\nend", "b\nmid\nend", []string{"1\n", "2\n"}},
		{"é<proposed_plan>\n", "é<proposed_plan>\n", nil},
		{"</proposed_plan>\n", "</proposed_plan>\n", nil},
	}
	for _, c := range cases {
		v, plans := splitPlans(c.text)
		if v != c.visible || !slices.Equal(plans, c.plans) {
			t.Errorf("splitPlans(%q) = %q, %q; want %q, %q", c.text, v, plans, c.visible, c.plans)
		}
		for cut := 0; cut <= len(c.text); cut++ {
			for _, size := range []int{1, 3, 7} {
				var p planSplitter
				var segs []planSeg
				pieces := []string{c.text[:cut]}
				for rest := c.text[cut:]; rest != ""; {
					n := min(size, len(rest))
					pieces = append(pieces, rest[:n])
					rest = rest[n:]
				}
				for _, piece := range pieces {
					segs = append(segs, p.push(piece)...)
				}
				segs = append(segs, p.finish()...)
				gv, gp, open := joinSegs(segs)
				if gv != c.visible || !slices.Equal(gp, c.plans) || open {
					t.Fatalf("%q cut at %d in pieces of %d: %q, %q (open %v)", c.text, cut, size, gv, gp, open)
				}
			}
		}
	}
}

// Text that cannot be a tag goes out at once: only the start of a line
// that may still be a tag is held back.
func TestPlanSplitterHoldsOnlyPossibleTags(t *testing.T) {
	var p planSplitter
	if v, _, _ := joinSegs(p.push("Here is my pl")); v != "Here is my pl" {
		t.Fatalf("first piece: %q", v)
	}
	if v, _, _ := joinSegs(p.push("an.\n<proposed")); v != "an.\n" {
		t.Fatalf("second piece: %q", v)
	}
	segs := p.push("_plan>\n# Plan")
	if len(segs) != 2 || segs[0].kind != segPlanStart || segs[1] != (planSeg{segPlanText, "# Plan"}) {
		t.Fatalf("third piece: %+v", segs)
	}
	segs = p.push(" two\n</p")
	if len(segs) != 1 || segs[0] != (planSeg{segPlanText, " two\n"}) {
		t.Fatalf("fourth piece: %+v", segs)
	}
	if segs := p.push("roposed_plan>"); len(segs) != 0 {
		t.Fatalf("a tag line is held until its end: %+v", segs)
	}
	if segs := p.push("\n"); len(segs) != 1 || segs[0].kind != segPlanEnd {
		t.Fatalf("the newline closes the block: %+v", segs)
	}
	if segs := p.finish(); len(segs) != 0 {
		t.Fatalf("finish: %+v", segs)
	}
}

func BenchmarkPlanSplitter(b *testing.B) {
	text := strings.Repeat("Some words of a long answer, and more of them.\n", 200) + "<proposed_plan>\n" + strings.Repeat("- a step\n", 100) + "</proposed_plan>\n"
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		var p planSplitter
		for i := 0; i < len(text); i += 16 {
			p.push(text[i:min(i+16, len(text))])
		}
		p.finish()
	}
}

// A plan-mode turn: the model is told about the mode once, is not offered
// update_plan, and its proposed plan streams as a plan item inside the
// message, whose own text loses the block.
func TestPlanModeTurn(t *testing.T) {
	text := []string{"Here is my pl", "an.\n<proposed", "_plan>\n# Plan", "\n- step one\n-", " step two\n</p", "roposed_plan>", "\n"}
	c := newFakeClient(t, script{events: textEvents("msg_1", text...)}, script{events: textEvents("msg_2", "again")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	plan := CollaborationMode{Kind: ModePlan}
	ack, err := s.Call(ctx10(t), OpUserInput{Input: []UserInput{TextInput("go")}, Overrides: TurnOverrides{Mode: &plan}})
	if err != nil {
		t.Fatal(err)
	}
	evs := col.waitFor(turnEnded)
	var got []string
	var deltas, planDeltas string
	var planDone, msgDone TurnItem
	for _, ev := range evs {
		switch m := ev.Msg.(type) {
		case ItemStarted:
			got = append(got, "started "+itemName(m.Item))
		case ItemCompleted:
			got = append(got, "completed "+itemName(m.Item))
			if _, ok := m.Item.(PlanItem); ok {
				planDone = m.Item
			}
			if _, ok := m.Item.(AgentMessageItem); ok {
				msgDone = m.Item
			}
		case AgentMessageDelta:
			deltas += m.Delta
			got = append(got, "message delta")
		case PlanDelta:
			planDeltas += m.Delta
			got = append(got, "plan delta")
		}
	}
	want := []string{"started UserMessageItem", "completed UserMessageItem", "started AgentMessageItem",
		"message delta", "message delta", "started PlanItem", "plan delta", "plan delta", "plan delta",
		"completed PlanItem", "completed AgentMessageItem"}
	if !slices.Equal(got, want) {
		t.Fatalf("items:\n got %v\nwant %v", got, want)
	}
	wantPlan := "# Plan\n- step one\n- step two\n"
	if p := planDone.(PlanItem); p.ID != ack.TurnID+"-plan" || p.Text != wantPlan || planDeltas != wantPlan {
		t.Fatalf("plan item %+v, deltas %q", p, planDeltas)
	}
	if m := msgDone.(AgentMessageItem); m.Text != "Here is my plan.\n" || deltas != m.Text {
		t.Fatalf("message %+v, deltas %q", m, deltas)
	}
	if done := evs[len(evs)-1].Msg.(TurnComplete); done.LastAgentMessage != "Here is my plan.\n" {
		t.Fatalf("last message %q", done.LastAgentMessage)
	}
	req := c.requests()[0]
	var modeMsgs int
	for _, it := range req.Input {
		if it.Role() == "developer" && strings.HasPrefix(it.MessageText(), "<collaboration_mode># Collaboration mode: Plan") {
			modeMsgs++
		}
	}
	if modeMsgs != 1 || strings.Contains(string(toolNames(req)), "update_plan") || !strings.Contains(toolNames(req), "request_user_input") {
		t.Fatalf("mode messages %d, tools %s", modeMsgs, toolNames(req))
	}
	// The next turn, still in plan mode, is not told again; the model
	// reads its own message whole.
	if _, err := s.Call(ctx10(t), userInput("more")); err != nil {
		t.Fatal(err)
	}
	col.waitFor(func(ev Event) bool { _, ok := ev.Msg.(TurnComplete); return ok && ev.TurnID != ack.TurnID })
	var n int
	var sawWhole bool
	for _, it := range c.requests()[1].Input {
		if strings.HasPrefix(it.MessageText(), "<collaboration_mode>") {
			n++
		}
		sawWhole = sawWhole || it.MessageText() == strings.Join(text, "")
	}
	if n != 1 || !sawWhole {
		t.Fatalf("second request: %d mode messages, whole message %v", n, sawWhole)
	}
}

// Leaving plan mode tells the model; a message without a block makes no
// plan item; update_plan is offered again.
func TestDefaultModeAfterPlan(t *testing.T) {
	c := newFakeClient(t, script{events: textEvents("msg_1", "a")}, script{events: textEvents("msg_2", "b\n<proposed_plan>\nx\n</proposed_plan>\n")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	plan, def := CollaborationMode{Kind: ModePlan}, CollaborationMode{Kind: ModeDefault}
	ack, _ := s.Call(ctx10(t), OpUserInput{Input: []UserInput{TextInput("1")}, Overrides: TurnOverrides{Mode: &plan}})
	col.waitFor(turnEnded)
	if _, err := s.Call(ctx10(t), OpUserInput{Input: []UserInput{TextInput("2")}, Overrides: TurnOverrides{Mode: &def}}); err != nil {
		t.Fatal(err)
	}
	evs := col.waitFor(func(ev Event) bool { _, ok := ev.Msg.(TurnComplete); return ok && ev.TurnID != ack.TurnID })
	for _, ev := range evs {
		if m, ok := ev.Msg.(ItemStarted); ok {
			if _, ok := m.Item.(PlanItem); ok {
				t.Fatalf("a plan item outside plan mode: %+v", m)
			}
		}
	}
	req := c.requests()[1]
	last := ""
	for _, it := range req.Input {
		if strings.HasPrefix(it.MessageText(), "<collaboration_mode>") {
			last = it.MessageText()
		}
	}
	if !strings.HasPrefix(last, "<collaboration_mode># Collaboration mode: Default") || !strings.Contains(toolNames(req), "update_plan") {
		t.Fatalf("last mode message %q, tools %s", last, toolNames(req))
	}
	if done := evs[len(evs)-1].Msg.(TurnComplete); !strings.Contains(done.LastAgentMessage, "<proposed_plan>") {
		t.Fatalf("outside plan mode the message is kept whole: %q", done.LastAgentMessage)
	}
	// A session resumed from this history knows the model was told.
	if got := lastModeText(s.History()); got != defaultModeInstructions {
		t.Fatalf("last mode text %q", got)
	}
}

// toolNames lists the names (or types) of the tools of a request.
func toolNames(req *model.Request) string {
	var names []string
	for _, spec := range req.Tools {
		var v struct{ Name, Type string }
		_ = json.Unmarshal(spec, &v)
		names = append(names, cmp.Or(v.Name, v.Type))
	}
	return strings.Join(names, ",")
}

// A rollback that drops the turn which told the model its mode tells it
// again in the next turn.
func TestModeToldAgainAfterRollback(t *testing.T) {
	c := newFakeClient(t, script{events: textEvents("msg_1", "a")}, script{events: textEvents("msg_2", "b")}, script{events: textEvents("msg_3", "c")})
	s := newTestSession(t, c, nil)
	col := collect(t, s, nil)
	plan := CollaborationMode{Kind: ModePlan}
	s.Call(ctx10(t), userInput("one"))
	col.waitFor(turnEnded)
	s.Call(ctx10(t), OpUserInput{Input: []UserInput{TextInput("two")}, Overrides: TurnOverrides{Mode: &plan}})
	col.waitFor(func(ev Event) bool { x, ok := ev.Msg.(TurnComplete); return ok && x.LastAgentMessage == "b" })
	if _, err := s.Call(ctx10(t), OpRollback{NumTurns: 1}); err != nil {
		t.Fatal(err)
	}
	s.Call(ctx10(t), userInput("three"))
	col.waitFor(func(ev Event) bool { x, ok := ev.Msg.(TurnComplete); return ok && x.LastAgentMessage == "c" })
	var n int
	for _, it := range c.requests()[2].Input {
		if strings.HasPrefix(it.MessageText(), "<collaboration_mode>") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d mode messages after the rollback:\n%s", n, rawList(c.requests()[2].Input))
	}
}
