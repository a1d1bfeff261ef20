package model

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Redacted stands for a credential cut out of a message.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest value treated as a credential to cut out
// of messages: replacing every "1" or "on" in an error would destroy it,
// and a value that short protects nothing anyway.
const minSecretLen = 6

// sensitiveWords mark a header, query parameter or config key whose value
// is a credential.
var sensitiveWords = []string{"auth", "key", "token", "secret", "password", "cookie", "credential", "signature"}

// SensitiveName reports whether a header, query parameter or config key
// named name holds a credential (Authorization, X-Api-Key, api-key,
// Cookie, …), ignoring case.
func SensitiveName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range sensitiveWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Secrets returns the credential values a request to p carries besides the
// API key key: the env_http_headers values, and the http_headers and
// query_params whose names say they are credentials. Short values are
// left out (see minSecretLen).
func (p Provider) Secrets(key string) []string {
	var out []string
	add := func(v string) {
		if len(v) >= minSecretLen && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	add(key)
	add(p.APIKey)
	for name, v := range p.HTTPHeaders {
		if _, fromEnv := p.EnvHTTPHeaders[name]; fromEnv || SensitiveName(name) {
			add(v)
			// "Bearer xyz" is sent whole; xyz alone may be echoed.
			if _, tok, ok := strings.Cut(v, " "); ok {
				add(strings.TrimSpace(tok))
			}
		}
	}
	for name, v := range p.QueryParams {
		if SensitiveName(name) {
			add(v)
		}
	}
	// Longest first, so that a secret containing another is cut whole.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// tokenPatterns catch credentials whose value is not known: a bearer
// token a server echoes from some other request, an OpenAI-style key.
// They are compiled at first use, not at the daemon's start.
var tokenPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{6,}`),
		regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{12,}`),
	}
})

// Redact cuts every secret, and anything that looks like a bearer token or
// an API key, out of s.
func Redact(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	for i, re := range tokenPatterns() {
		if i == 0 {
			s = re.ReplaceAllString(s, "${1}"+Redacted)
		} else {
			s = re.ReplaceAllString(s, Redacted)
		}
	}
	return s
}

// redactError returns err with the secrets cut out of what it says: a
// model error's message (which may be a server's body that echoes the
// request's headers, or a URL with its query) and its cause's text.
// Other errors (context ends) carry no server text and pass unchanged.
func redactError(err error, secrets []string) error {
	var me *Error
	if err == nil || !errors.As(err, &me) {
		return err
	}
	cp := *me
	cp.Message = Redact(cp.Message, secrets)
	if cp.Err != nil {
		if text := cp.Err.Error(); Redact(text, secrets) != text {
			cp.Err = redactedCause{text: Redact(text, secrets), err: cp.Err}
		}
	}
	return &cp
}

// redactedCause is a cause whose text had secrets in it; errors.Is still
// sees the original.
type redactedCause struct {
	text string
	err  error
}

func (r redactedCause) Error() string { return r.text }
func (r redactedCause) Unwrap() error { return r.err }
