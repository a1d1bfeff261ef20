package rollout

import (
	"encoding/json"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/review"
)

// Review items in the reference's schema: entered_review_mode and
// exited_review_mode events (the typed EnteredReviewMode and
// ExitedReviewMode items of the reference's paginated threads have the
// same fields).

func enteredToRef(v core.EnteredReviewModeItem) refEnteredReview {
	hint := v.Hint
	return refEnteredReview{Type: evEnteredReview, Target: reviewTargetToRef(v.Target), UserFacingHint: &hint, AgentdItemID: v.ID}
}

func exitedToRef(v core.ExitedReviewModeItem) refExitedReview {
	w := refExitedReview{Type: evExitedReview, ReviewOutput: v.Output, AgentdItemID: v.ID}
	if v.Output == nil {
		w.AgentdReview = v.Review
	} else if v.Output.Findings == nil {
		out := *v.Output
		out.Findings = []review.Finding{} // the reference's array is never null
		w.ReviewOutput = &out
	}
	return w
}

func reviewTargetToRef(t review.Target) refReviewTarget {
	w := refReviewTarget{Type: string(t.Kind)}
	switch t.Kind {
	case review.BaseBranch:
		w.Branch = t.Branch
	case review.Commit:
		w.SHA = t.SHA
		if t.Title != "" {
			w.Title = &t.Title
		}
	case review.Custom:
		w.Instructions = t.Instructions
	}
	return w
}

func reviewTargetFromRef(w refReviewTarget) review.Target {
	t := review.Target{Kind: review.Kind(w.Type), Branch: w.Branch, SHA: w.SHA, Instructions: w.Instructions}
	if w.Title != nil {
		t.Title = *w.Title
	}
	return t
}

// decodeEntered reads an entered_review_mode payload (or a typed item);
// a record without a hint gets the target's label.
func decodeEntered(b []byte) (core.EnteredReviewModeItem, error) {
	var w refEnteredReview
	if err := json.Unmarshal(b, &w); err != nil {
		return core.EnteredReviewModeItem{}, err
	}
	it := core.EnteredReviewModeItem{ID: w.AgentdItemID, Target: reviewTargetFromRef(w.Target)}
	if it.ID == "" {
		it.ID = w.ID
	}
	if w.UserFacingHint != nil {
		it.Hint = *w.UserFacingHint
	} else {
		it.Hint = it.Target.Hint()
	}
	return it, nil
}

// decodeExited reads an exited_review_mode payload (or a typed item): the
// review is rendered from the answer, or is the text recorded without
// one.
func decodeExited(b []byte) (core.ExitedReviewModeItem, error) {
	var w refExitedReview
	if err := json.Unmarshal(b, &w); err != nil {
		return core.ExitedReviewModeItem{}, err
	}
	it := core.ExitedReviewModeItem{ID: w.AgentdItemID, Output: w.ReviewOutput, Review: w.AgentdReview}
	if it.ID == "" {
		it.ID = w.ID
	}
	switch {
	case it.Output != nil:
		if it.Output.Findings == nil {
			it.Output.Findings = []review.Finding{}
		}
		it.Review = it.Output.Render()
	case it.Review == "":
		it.Review = review.NoReview
	}
	return it, nil
}
