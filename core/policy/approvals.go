package policy

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// SessionApprovals remembers what the user accepted for the rest of a
// session: exact commands ("acceptForSession"), command prefixes (exec
// policy amendments, "acceptWithExecpolicyAmendment") and roots under
// which patches may be applied without asking again. It is safe for
// concurrent use; the zero value is empty and ready. A nil
// *SessionApprovals approves nothing.
type SessionApprovals struct {
	// mu guards the fields that follow.
	mu       sync.Mutex
	exact    map[string]struct{}
	prefixes [][]string
	roots    []string
}

// NewSessionApprovals returns an empty store.
func NewSessionApprovals() *SessionApprovals { return &SessionApprovals{} }

// argvKey joins argv unambiguously: NUL cannot occur inside an argument.
func argvKey(argv []string) string { return strings.Join(argv, "\x00") }

// ApproveCommand accepts exactly argv for the session.
func (s *SessionApprovals) ApproveCommand(argv []string) {
	if len(argv) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exact == nil {
		s.exact = make(map[string]struct{})
	}
	s.exact[argvKey(argv)] = struct{}{}
}

// AddPrefix accepts, for the session, every command that begins with
// prefix (an exec policy amendment).
func (s *SessionApprovals) AddPrefix(prefix []string) {
	if len(prefix) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.prefixes {
		if slices.Equal(p, prefix) {
			return
		}
	}
	s.prefixes = append(s.prefixes, slices.Clone(prefix))
}

// ApproveRoot lets later patches under root (an absolute directory) apply
// without asking.
func (s *SessionApprovals) ApproveRoot(root string) {
	if !filepath.IsAbs(root) {
		return
	}
	root = filepath.Clean(root)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.roots, root) {
		s.roots = append(s.roots, root)
	}
}

// CommandApproved reports whether argv was accepted for the session:
// exactly, by a prefix of argv, or because every command of its plain
// shell script begins with an accepted prefix.
func (s *SessionApprovals) CommandApproved(argv []string) bool {
	if s == nil || len(argv) == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.exact[argvKey(argv)]; ok {
		return true
	}
	if s.hasPrefixLocked(argv) {
		return true
	}
	cmds := commandWords(argv)
	for _, c := range cmds {
		if !s.hasPrefixLocked(c) {
			return false
		}
	}
	return true
}

func (s *SessionApprovals) hasPrefixLocked(words []string) bool {
	for _, p := range s.prefixes {
		if len(p) <= len(words) && slices.Equal(p, words[:len(p)]) {
			return true
		}
	}
	return false
}

// PathsApproved reports whether every path lies under an approved root.
func (s *SessionApprovals) PathsApproved(paths []string) bool {
	if s == nil || len(paths) == 0 {
		return false
	}
	s.mu.Lock()
	roots := slices.Clone(s.roots)
	s.mu.Unlock()
	for _, p := range paths {
		if !underAny(p, roots) {
			return false
		}
	}
	return true
}
