package wsauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"

	"github.com/agentd-dev/agentd/server/scope"
	"github.com/agentd-dev/agentd/server/transport"
)

// ModeConfigTokens is what Mode says when only config.toml's tokens
// authenticate (no --ws-auth).
const ModeConfigTokens = "config-tokens"

// Token is a token config.toml names ([app_server.tokens.NAME]): the
// SHA-256 digest of its value, and its scope.
type Token struct {
	Name   string
	Digest [sha256.Size]byte
	Scope  scope.Scope
}

// WithTokens returns an authenticator that admits config.toml's tokens
// with their scopes, and otherwise whatever next admits (nil: nothing
// else). With no tokens it is next itself. Configuring tokens turns
// authentication on for ws:// listeners even without --ws-auth: a token
// with a scope means nothing if a client without one gets more.
func WithTokens(next Authenticator, tokens []Token) Authenticator {
	if len(tokens) == 0 {
		return next
	}
	return &tokenSet{tokens: tokens, next: next}
}

// tokenSet checks config.toml's tokens first, then next's.
type tokenSet struct {
	tokens []Token
	next   Authenticator
}

func (t *tokenSet) Mode() string {
	if t.next != nil {
		return t.next.Mode() + "+" + ModeConfigTokens
	}
	return ModeConfigTokens
}

func (t *tokenSet) Authenticate(r *http.Request) (transport.Identity, error) {
	token, err := bearer(r)
	if err != nil {
		return transport.Identity{}, err
	}
	sum := sha256.Sum256([]byte(token))
	// Every digest is compared, in constant time, so the time taken does
	// not tell which token (if any) matched.
	match := -1
	for i := range t.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.tokens[i].Digest[:]) == 1 {
			match = i
		}
	}
	if match >= 0 {
		return transport.Identity{Scope: t.tokens[match].Scope, Name: "config token " + strconv.Quote(t.tokens[match].Name)}, nil
	}
	if t.next == nil {
		return transport.Identity{}, errBadToken
	}
	return t.next.Authenticate(r)
}
