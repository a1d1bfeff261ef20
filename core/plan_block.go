package core

import "strings"

// The proposed plan of plan mode arrives inside the model's message, as
// a block between two tag lines:
//
//	<proposed_plan>
//	# The plan
//	</proposed_plan>
//
// A tag counts only on a line of its own (blanks around it allowed), so
// that a message that merely mentions the tag is left alone. The newline
// that ends a tag line belongs to neither the message nor the plan.
const (
	planOpenTag  = "<proposed_plan>"
	planCloseTag = "</proposed_plan>"
)

// planSegKind says what a planSeg is.
type planSegKind uint8

const (
	segText      planSegKind = iota + 1 // text of the message the user sees
	segPlanStart                        // a block opened
	segPlanText                         // text of the open block
	segPlanEnd                          // the block closed (or the message ended inside it)
)

// planSeg is one piece of a message split by planSplitter.
type planSeg struct {
	kind planSegKind
	text string
}

// planSplitter splits a message's text into its visible text and its
// proposed plan blocks as the text streams in. Text that might still turn
// out to be a tag (the start of a line that is a prefix of one) is held
// back until the line says what it is; everything else comes out at once.
type planSplitter struct {
	inPlan bool
	// midLine: the current line is known not to be a tag; its text goes
	// out as it comes until its newline.
	midLine bool
	held    strings.Builder
	out     []planSeg
}

// push takes the next piece of the message and returns what it makes
// known, runs of text merged.
func (p *planSplitter) push(s string) []planSeg {
	p.out = p.out[:0:0]
	for s != "" {
		if p.midLine {
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				p.content(s)
				return p.out
			}
			p.content(s[:i+1])
			s = s[i+1:]
			p.midLine = false
			continue
		}
		c := s[0]
		s = s[1:]
		if c == '\n' {
			p.lineEnd()
			continue
		}
		p.held.WriteByte(c)
		if !mayBeTag(p.held.String(), p.tag()) {
			p.content(p.held.String())
			p.held.Reset()
			p.midLine = true
		}
	}
	return p.out
}

// finish ends the message: held text goes out (a tag when it is one), and
// a block left open is closed.
func (p *planSplitter) finish() []planSeg {
	p.out = p.out[:0:0]
	if h := p.held.String(); h != "" {
		p.held.Reset()
		if isTag(h, p.tag()) {
			p.toggle()
		} else {
			p.content(h)
		}
	}
	if p.inPlan {
		p.inPlan = false
		p.out = append(p.out, planSeg{kind: segPlanEnd})
	}
	return p.out
}

// lineEnd ends a line that was held back: a tag line switches the block,
// any other line goes out with its newline.
func (p *planSplitter) lineEnd() {
	h := p.held.String()
	p.held.Reset()
	if isTag(h, p.tag()) {
		p.toggle()
		return
	}
	p.content(h + "\n")
}

func (p *planSplitter) toggle() {
	if p.inPlan {
		p.out = append(p.out, planSeg{kind: segPlanEnd})
	} else {
		p.out = append(p.out, planSeg{kind: segPlanStart})
	}
	p.inPlan = !p.inPlan
}

// tag is the tag that would change the state now.
func (p *planSplitter) tag() string {
	if p.inPlan {
		return planCloseTag
	}
	return planOpenTag
}

// content emits text as message or plan text, merged with the text just
// before it of the same kind.
func (p *planSplitter) content(s string) {
	if s == "" {
		return
	}
	kind := segText
	if p.inPlan {
		kind = segPlanText
	}
	if n := len(p.out); n > 0 && p.out[n-1].kind == kind {
		p.out[n-1].text += s
		return
	}
	p.out = append(p.out, planSeg{kind: kind, text: s})
}

// mayBeTag reports whether line, the start of a line, may still become the
// tag line of tag.
func mayBeTag(line, tag string) bool {
	t := strings.TrimLeft(line, " \t")
	if len(t) <= len(tag) {
		return strings.HasPrefix(tag, t)
	}
	return strings.HasPrefix(t, tag) && strings.TrimRight(t[len(tag):], " \t\r") == ""
}

// isTag reports whether line (without its newline) is the tag line of tag.
func isTag(line, tag string) bool {
	return strings.Trim(line, " \t\r") == tag
}

// splitPlans splits a whole message into its visible text and the text of
// each proposed plan block in it.
func splitPlans(text string) (visible string, plans []string) {
	var p planSplitter
	var b strings.Builder
	take := func(segs []planSeg) {
		for _, s := range segs {
			switch s.kind {
			case segText:
				b.WriteString(s.text)
			case segPlanStart:
				plans = append(plans, "")
			case segPlanText:
				plans[len(plans)-1] += s.text
			}
		}
	}
	take(p.push(text))
	take(p.finish())
	return b.String(), plans
}
