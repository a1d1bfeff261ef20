package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/server/scope"
)

func digest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// [app_server.tokens.<name>] becomes WSTokens, sorted by name, without a
// warning (the keys are known); --config can add one.
func TestWebSocketTokens(t *testing.T) {
	home := writeConfig(t, `
[app_server.tokens.dashboard]
sha256 = "`+digest("dash")+`"
scope = "read"

[app_server.tokens.bot]
sha256 = "`+strings.ToUpper(digest("bot"))+`"
scope = "operate"
`)
	cfg, err := Load(Options{Home: home, Getenv: env(), Overrides: []string{
		`app_server.tokens.ops = { sha256 = "` + digest("ops") + `", scope = "admin" }`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Fatalf("warnings %v", cfg.Warnings)
	}
	want := []struct {
		name, token string
		scope       scope.Scope
	}{{"bot", "bot", scope.Operate}, {"dashboard", "dash", scope.Read}, {"ops", "ops", scope.Admin}}
	if len(cfg.WSTokens) != len(want) {
		t.Fatalf("tokens %+v", cfg.WSTokens)
	}
	for i, w := range want {
		got := cfg.WSTokens[i]
		if got.Name != w.name || got.Scope != w.scope || got.SHA256 != sha256.Sum256([]byte(w.token)) {
			t.Fatalf("token %d: %+v, want %s %v", i, got, w.name, w.scope)
		}
	}
}

// A token table that cannot grant a clear scope to a clear token stops
// the daemon, naming the key.
func TestWebSocketTokenErrors(t *testing.T) {
	d := digest("x")
	for name, tc := range map[string]struct{ file, want string }{
		"no digest":   {"[app_server.tokens.a]\nscope = \"read\"\n", "`app_server.tokens.a.sha256` is required"},
		"bad digest":  {"[app_server.tokens.a]\nsha256 = \"abc\"\nscope = \"read\"\n", "`app_server.tokens.a.sha256` must be a 64-character hex SHA-256 digest"},
		"no scope":    {"[app_server.tokens.a]\nsha256 = \"" + d + "\"\n", "`app_server.tokens.a.scope` is required"},
		"bad scope":   {"[app_server.tokens.a]\nsha256 = \"" + d + "\"\nscope = \"root\"\n", "`app_server.tokens.a.scope`: \"root\" is not a scope"},
		"same digest": {"[app_server.tokens.a]\nsha256 = \"" + d + "\"\nscope = \"read\"\n[app_server.tokens.b]\nsha256 = \"" + d + "\"\nscope = \"admin\"\n", "one token cannot have two scopes"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(Options{Home: writeConfig(t, tc.file), Getenv: env()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
