package config

import (
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/agentd-dev/agentd/server/scope"
)

// applyTokens resolves [app_server.tokens.<name>]: each needs the hex
// SHA-256 digest of its token and a scope. A digest named twice is an
// error: one token would have two scopes.
func applyTokens(cfg *Config, t *appServerTable) error {
	if t == nil {
		return nil
	}
	names := make([]string, 0, len(t.Tokens))
	for name := range t.Tokens {
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[[32]byte]string{}
	for _, name := range names {
		tt := t.Tokens[name]
		key := fmt.Sprintf("app_server.tokens.%s", name)
		if tt.SHA256 == nil {
			return fmt.Errorf("config key `%s.sha256` is required: the hex SHA-256 digest of the token", key)
		}
		d, err := hex.DecodeString(*tt.SHA256)
		if err != nil || len(d) != 32 {
			return fmt.Errorf("config key `%s.sha256` must be a 64-character hex SHA-256 digest", key)
		}
		if tt.Scope == nil {
			return fmt.Errorf("config key `%s.scope` is required: one of read, operate, admin", key)
		}
		sc, err := scope.Parse(*tt.Scope)
		if err != nil {
			return fmt.Errorf("config key `%s.scope`: %v", key, err)
		}
		tok := WSToken{Name: name, Scope: sc}
		copy(tok.SHA256[:], d)
		if other, dup := seen[tok.SHA256]; dup {
			return fmt.Errorf("config key `%s.sha256`: the same digest as app_server.tokens.%s; one token cannot have two scopes", key, other)
		}
		seen[tok.SHA256] = name
		cfg.WSTokens = append(cfg.WSTokens, tok)
	}
	return nil
}
