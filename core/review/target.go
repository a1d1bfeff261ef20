package review

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is what a review looks at. The names are the protocol's.
type Kind string

const (
	// UncommittedChanges reviews the working tree: staged, unstaged and
	// untracked files.
	UncommittedChanges Kind = "uncommittedChanges"
	// BaseBranch reviews the current branch against a base branch.
	BaseBranch Kind = "baseBranch"
	// Commit reviews one commit.
	Commit Kind = "commit"
	// Custom reviews by the user's own instructions.
	Custom Kind = "custom"
)

// Target is what to review.
type Target struct {
	Kind Kind
	// Branch is the base branch (BaseBranch).
	Branch string
	// SHA names the commit (Commit); Title is its optional label.
	SHA, Title string
	// Instructions are the user's (Custom).
	Instructions string
}

// Validate refuses a target that names nothing, with the reference's
// texts, and a branch or commit name git would take for an option.
func (t Target) Validate() error {
	switch t.Kind {
	case UncommittedChanges:
		return nil
	case BaseBranch:
		if strings.TrimSpace(t.Branch) == "" {
			return errors.New("branch must not be empty")
		}
		return checkRevision("branch", t.Branch)
	case Commit:
		if strings.TrimSpace(t.SHA) == "" {
			return errors.New("sha must not be empty")
		}
		return checkRevision("sha", t.SHA)
	case Custom:
		if strings.TrimSpace(t.Instructions) == "" {
			return errors.New("instructions must not be empty")
		}
		return nil
	}
	return fmt.Errorf("unknown review target %q", cut(string(t.Kind)))
}

// checkRevision refuses a name that could be read as an option, or that
// holds a control character (a NUL or a line break).
func checkRevision(field, name string) error {
	name = strings.TrimSpace(name)
	if strings.HasPrefix(name, "-") {
		return fmt.Errorf("invalid %s %q: it must not start with '-'", field, cut(name))
	}
	if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("invalid %s %q: it holds a control character", field, cut(name))
	}
	return nil
}

// Hint is the short label clients show for the review (the
// enteredReviewMode item's text), as the reference words it.
func (t Target) Hint() string {
	switch t.Kind {
	case BaseBranch:
		return "changes against '" + strings.TrimSpace(t.Branch) + "'"
	case Commit:
		h := "commit " + shortSHA(strings.TrimSpace(t.SHA))
		if title := strings.TrimSpace(t.Title); title != "" {
			h += ": " + title
		}
		return h
	case Custom:
		return strings.TrimSpace(t.Instructions)
	}
	return "current changes"
}

// shortSHA is the first seven characters of a commit name.
func shortSHA(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}

// maxEcho bounds a name echoed in an error.
const maxEcho = 256

// cut shortens s for an error message.
func cut(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	i := maxEcho
	for i > 0 && !utf8RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
