package policy

import "strings"

// ShellQuote joins argv into one shell command line for display, quoting
// each word that needs it with single quotes: ["/bin/bash", "-lc",
// "echo hello"] becomes "/bin/bash -lc 'echo hello'". Pasting the result
// into a POSIX shell runs the same argv.
func ShellQuote(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteWord(a))
	}
	return b.String()
}

func quoteWord(s string) string {
	if s == "" {
		return "''"
	}
	if !needsQuote(s) {
		return s
	}
	// Inside single quotes nothing is special except the quote itself,
	// which is written as '\'' (close, escaped quote, reopen).
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func needsQuote(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("_-./=:,+@%", c) >= 0:
		default:
			return true
		}
	}
	return false
}
