package wsauth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentd-dev/agentd/server/scope"
	"github.com/agentd-dev/agentd/server/transport"
)

func file(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFlagErrorsAreTheReferences(t *testing.T) {
	digest := strings.Repeat("0", 64)
	secret := file(t, strings.Repeat("s", 32))
	for _, tc := range []struct {
		name string
		f    Flags
		want string
	}{
		{"flags without mode", Flags{TokenSHA256: digest}, "websocket auth flags require `--ws-auth capability-token` or `--ws-auth signed-bearer-token`"},
		{"no token source", Flags{Mode: ModeCapabilityToken}, "`--ws-token-file` or `--ws-token-sha256` is required when `--ws-auth capability-token` is set"},
		{"both sources", Flags{Mode: ModeCapabilityToken, TokenSHA256: digest, TokenFile: file(t, "x")}, "`--ws-token-file` and `--ws-token-sha256` are mutually exclusive"},
		{"bad digest", Flags{Mode: ModeCapabilityToken, TokenSHA256: "abc"}, "--ws-token-sha256 must be a 64-character hex SHA-256 digest"},
		{"jwt flag with capability", Flags{Mode: ModeCapabilityToken, TokenSHA256: digest, Issuer: "x"}, "`--ws-shared-secret-file`, `--ws-issuer`, `--ws-audience`, and `--ws-max-clock-skew-seconds` require `--ws-auth signed-bearer-token`"},
		{"no secret", Flags{Mode: ModeSignedBearerToken}, "`--ws-shared-secret-file` is required when `--ws-auth signed-bearer-token` is set"},
		{"short secret", Flags{Mode: ModeSignedBearerToken, SharedSecretFile: file(t, "short")}, "must be at least 32 bytes"},
		{"token with jwt", Flags{Mode: ModeSignedBearerToken, SharedSecretFile: secret, TokenSHA256: digest}, "require `--ws-auth capability-token`, not `signed-bearer-token`"},
		{"empty token file", Flags{Mode: ModeCapabilityToken, TokenFile: file(t, " \n")}, "is empty"},
		{"unknown mode", Flags{Mode: "other"}, "invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if a, err := New(Flags{}); a != nil || err != nil {
		t.Fatalf("no mode: %v %v", a, err)
	}
}

func check(a Authenticator, header string) error {
	_, err := identify(a, header)
	return err
}

func identify(a Authenticator, header string) (transport.Identity, error) {
	r := httptest.NewRequest("GET", "/", nil)
	if header != "" {
		r.Header.Set("Authorization", header)
	}
	return a.Authenticate(r)
}

func reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	if err != nil {
		return "not an *Error: " + err.Error()
	}
	return ""
}

func TestCapabilityToken(t *testing.T) {
	fromFile, err := New(Flags{Mode: ModeCapabilityToken, TokenFile: file(t, "s3cret\n")})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("s3cret"))
	fromDigest, err := New(Flags{Mode: ModeCapabilityToken, TokenSHA256: hex.EncodeToString(sum[:])})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []Authenticator{fromFile, fromDigest} {
		for header, want := range map[string]string{
			"":                    "missing websocket bearer token",
			"Bearer s3cret":       "",
			"bearer s3cret":       "",
			"Bearer wrong":        "invalid websocket bearer token",
			"Bearer s3cret2":      "invalid websocket bearer token",
			"Basic s3cret":        "invalid authorization header",
			"Bearer ":             "invalid authorization header",
			"s3cret":              "invalid authorization header",
			"Bearer  s3cret  ":    "",
			"Bearer s3cret extra": "invalid websocket bearer token",
		} {
			if got := reason(check(a, header)); got != want {
				t.Errorf("%s %q: %q, want %q", a.Mode(), header, got, want)
			}
		}
	}
}

func TestSignedBearerToken(t *testing.T) {
	secret := []byte(strings.Repeat("k", 40))
	a, err := New(Flags{Mode: ModeSignedBearerToken, SharedSecretFile: file(t, string(secret)), Issuer: "iss1", Audience: "aud1"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sign := func(method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(method, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	hs := func(claims jwt.MapClaims) string { return sign(jwt.SigningMethodHS256, secret, claims) }
	exp := now.Add(time.Minute).Unix()
	for name, tc := range map[string]struct {
		token, want string
	}{
		"good":           {hs(jwt.MapClaims{"iss": "iss1", "aud": "aud1", "exp": exp}), ""},
		"audience list":  {hs(jwt.MapClaims{"iss": "iss1", "aud": []string{"x", "aud1"}, "exp": exp}), ""},
		"within skew":    {hs(jwt.MapClaims{"iss": "iss1", "aud": "aud1", "exp": now.Add(-10 * time.Second).Unix()}), ""},
		"no exp":         {hs(jwt.MapClaims{"iss": "iss1", "aud": "aud1"}), "invalid websocket jwt"},
		"expired":        {hs(jwt.MapClaims{"iss": "iss1", "aud": "aud1", "exp": now.Add(-2 * time.Minute).Unix()}), "expired websocket jwt"},
		"not yet valid":  {hs(jwt.MapClaims{"iss": "iss1", "aud": "aud1", "exp": now.Add(10 * time.Minute).Unix(), "nbf": now.Add(5 * time.Minute).Unix()}), "websocket jwt is not valid yet"},
		"issuer":         {hs(jwt.MapClaims{"iss": "x", "aud": "aud1", "exp": exp}), "websocket jwt issuer mismatch"},
		"no issuer":      {hs(jwt.MapClaims{"aud": "aud1", "exp": exp}), "websocket jwt issuer mismatch"},
		"audience":       {hs(jwt.MapClaims{"iss": "iss1", "aud": "x", "exp": exp}), "websocket jwt audience mismatch"},
		"bad signature":  {sign(jwt.SigningMethodHS256, []byte(strings.Repeat("z", 40)), jwt.MapClaims{"iss": "iss1", "aud": "aud1", "exp": exp}), "invalid websocket jwt"},
		"HS512":          {sign(jwt.SigningMethodHS512, secret, jwt.MapClaims{"iss": "iss1", "aud": "aud1", "exp": exp}), "invalid websocket jwt"},
		"alg none":       {sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"iss": "iss1", "aud": "aud1", "exp": exp}), "invalid websocket jwt"},
		"not a jwt":      {"abc", "invalid websocket jwt"},
		"missing header": {"", "missing websocket bearer token"},
	} {
		header := ""
		if tc.token != "" {
			header = "Bearer " + tc.token
		}
		if got := reason(check(a, header)); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}

	// Without issuer and audience flags, neither is required; the skew
	// is configurable.
	strict, err := New(Flags{Mode: ModeSignedBearerToken, SharedSecretFile: file(t, string(secret)), MaxClockSkewSecondsOK: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := reason(check(strict, "Bearer "+hs(jwt.MapClaims{"exp": exp}))); got != "" {
		t.Fatalf("plain token: %q", got)
	}
	if got := reason(check(strict, "Bearer "+hs(jwt.MapClaims{"exp": now.Add(-10 * time.Second).Unix()}))); got != "expired websocket jwt" {
		t.Fatalf("zero skew: %q", got)
	}
}

// A signed bearer token's scope claim gives its scope; without one it is
// admin, as the reference's tokens may do everything; a claim that names
// no scope is refused at the upgrade.
func TestSignedBearerTokenScopeClaim(t *testing.T) {
	secret := []byte(strings.Repeat("k", 40))
	a, err := New(Flags{Mode: ModeSignedBearerToken, SharedSecretFile: file(t, string(secret))})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Minute).Unix()
	for name, tc := range map[string]struct {
		claim  any
		want   scope.Scope
		reason string
	}{
		"none":    {nil, scope.Admin, ""},
		"read":    {"read", scope.Read, ""},
		"operate": {"operate", scope.Operate, ""},
		"admin":   {"admin", scope.Admin, ""},
		"unknown": {"superuser", 0, "invalid websocket jwt scope: one of read, operate, admin"},
		"empty":   {"", 0, "invalid websocket jwt scope: one of read, operate, admin"},
		"list":    {[]string{"read"}, 0, "invalid websocket jwt scope: one of read, operate, admin"},
	} {
		claims := jwt.MapClaims{"exp": exp, "sub": "dash"}
		if tc.claim != nil {
			claims[ScopeClaim] = tc.claim
		}
		token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		id, err := identify(a, "Bearer "+token)
		if got := reason(err); got != tc.reason {
			t.Errorf("%s: refusal %q, want %q", name, got, tc.reason)
			continue
		}
		if err == nil && (id.Scope != tc.want || id.Name != `signed bearer token "dash"`) {
			t.Errorf("%s: %+v, want scope %v", name, id, tc.want)
		}
	}
}

// config.toml's tokens are admitted with their scopes, before the flags'
// authenticator; the flags' token stays admin; without --ws-auth the
// config's tokens are the only ones; nothing else gets in.
func TestConfigTokens(t *testing.T) {
	tok := func(name, value string, s scope.Scope) Token {
		return Token{Name: name, Digest: sha256.Sum256([]byte(value)), Scope: s}
	}
	tokens := []Token{tok("dash", "reader-token", scope.Read), tok("bot", "operator-token", scope.Operate)}
	if WithTokens(nil, nil) != nil {
		t.Fatal("no tokens and no flags must leave authentication off")
	}
	flagAuth, err := New(Flags{Mode: ModeCapabilityToken, TokenFile: file(t, "flag-token")})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []Authenticator{WithTokens(nil, tokens), WithTokens(flagAuth, tokens)} {
		for header, want := range map[string]struct {
			scope  scope.Scope
			name   string
			reason string
		}{
			"Bearer reader-token":   {scope.Read, `config token "dash"`, ""},
			"Bearer operator-token": {scope.Operate, `config token "bot"`, ""},
			"Bearer nope":           {0, "", "invalid websocket bearer token"},
			"":                      {0, "", "missing websocket bearer token"},
		} {
			id, err := identify(a, header)
			if reason(err) != want.reason || (err == nil && (id.Scope != want.scope || id.Name != want.name)) {
				t.Errorf("%s %q: %+v %q, want %+v", a.Mode(), header, id, reason(err), want)
			}
		}
	}
	both := WithTokens(flagAuth, tokens)
	if id, err := identify(both, "Bearer flag-token"); err != nil || id.Scope != scope.Admin {
		t.Fatalf("the flag's token: %+v %v", id, err)
	}
	if _, err := identify(WithTokens(nil, tokens), "Bearer flag-token"); reason(err) != "invalid websocket bearer token" {
		t.Fatalf("without the flag: %v", err)
	}
	if both.Mode() != "capability-token+config-tokens" {
		t.Fatalf("mode %q", both.Mode())
	}
}
