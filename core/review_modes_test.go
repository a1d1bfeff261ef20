package core

import (
	"slices"
	"strings"
	"testing"
)

// A review on a thread in plan mode: the reviewer's answer is its own
// (quiet) and is not read for a proposed plan, so a <proposed_plan> block
// in it makes no plan item and stays in the review; the reviewer is
// offered neither update_plan nor view_image nor the hosted web search,
// which the thread's own plan-mode turn had (all but update_plan).
func TestReviewInPlanModeIsQuiet(t *testing.T) {
	answer := "Looks fine.\n<proposed_plan>\n- ship it\n</proposed_plan>\n"
	c := newFakeClient(t, script{events: textEvents("msg_1", "a")}, script{events: textEvents("msg_r", answer[:20], answer[20:])})
	s := newTestSession(t, c, func(cfg *Config) { cfg.WebSearch = WebSearchLive })
	col := collect(t, s, nil)
	plan := CollaborationMode{Kind: ModePlan}
	s.Call(ctx10(t), OpUserInput{Input: []UserInput{TextInput("one")}, Overrides: TurnOverrides{Mode: &plan}})
	col.waitFor(turnEnded)
	ack, err := s.Call(ctx10(t), reviewOp("check it"))
	if err != nil {
		t.Fatal(err)
	}
	evs := col.waitFor(func(ev Event) bool { _, ok := ev.Msg.(TurnComplete); return ok && ev.TurnID == ack.TurnID })
	var exited *ExitedReviewModeItem
	for _, ev := range evs {
		switch m := ev.Msg.(type) {
		case ItemStarted:
			if _, ok := m.Item.(PlanItem); ok {
				t.Fatalf("plan item started in the review: %+v", m.Item)
			}
		case ItemCompleted:
			switch it := m.Item.(type) {
			case PlanItem:
				t.Fatalf("plan item in the review: %+v", it)
			case ExitedReviewModeItem:
				exited = &it
			}
		case PlanDelta:
			t.Fatalf("plan delta in the review: %+v", m)
		}
	}
	if exited == nil || !strings.Contains(exited.Review, "<proposed_plan>") {
		t.Fatalf("exited review %+v", exited)
	}
	reqs := c.requests()
	thread, reviewer := strings.Split(toolNames(reqs[0]), ","), strings.Split(toolNames(reqs[1]), ",")
	if !slices.Contains(thread, "view_image") || !slices.Contains(thread, "web_search") || slices.Contains(thread, "update_plan") {
		t.Fatalf("plan-mode turn's tools %v", thread)
	}
	for _, name := range []string{"update_plan", "view_image", "web_search"} {
		if slices.Contains(reviewer, name) {
			t.Fatalf("reviewer offered %s: %v", name, reviewer)
		}
	}
	if !slices.Contains(reviewer, "request_user_input") {
		t.Fatalf("reviewer's tools %v", reviewer)
	}
}
