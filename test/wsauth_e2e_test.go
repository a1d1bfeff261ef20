package test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
)

// upgradeStatus tries a WebSocket upgrade with the given Authorization
// header ("" for none) and returns the HTTP status and body.
func upgradeStatus(t *testing.T, d *Daemon, auth string) (int, string) {
	t.Helper()
	h := http.Header{}
	if auth != "" {
		h.Set("Authorization", auth)
	}
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, d.URL("ws"), &websocket.DialOptions{HTTPHeader: h})
	if err == nil {
		_ = conn.CloseNow()
		return resp.StatusCode, ""
	}
	if resp == nil {
		t.Fatalf("dial: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// --ws-auth capability-token: the client's Authorization: Bearer token
// is checked before the upgrade (401 with the reference's reason
// otherwise); health probes and the Unix socket take no token; no token
// reaches the log.
func TestWebSocketCapabilityToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	const token = "capability-e2e-token-value"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0", "unix://"}, Args: []string{"--ws-auth", "capability-token", "--ws-token-file", tokenFile}})
	for auth, want := range map[string]string{
		"":                       "missing websocket bearer token",
		"Bearer wrong-token":     "invalid websocket bearer token",
		"Basic " + token:         "invalid authorization header",
		"Bearer " + token + "xx": "invalid websocket bearer token",
	} {
		if code, body := upgradeStatus(t, d, auth); code != http.StatusUnauthorized || body != want {
			t.Fatalf("Authorization %q: %d %q, want 401 %q", auth, code, body, want)
		}
	}
	if code := d.HTTPGet("/readyz", nil); code != 200 {
		t.Fatalf("readyz without a token: %d", code)
	}
	c := d.DialWS(WSOptions{Header: http.Header{"Authorization": {"Bearer " + token}}})
	c.Initialize("authed", nil)
	u := d.DialUnix()
	u.Initialize("unix", nil)
	if strings.Contains(d.Stderr(), token) {
		t.Fatal("the token reached the log")
	}
	if !d.HasLog(func(l LogLine) bool {
		return l.Msg == "rejected websocket client" && l.Str("reason") == "missing websocket bearer token"
	}) {
		t.Fatalf("refusals are not logged:\n%s", d.Stderr())
	}
}

// --ws-token-sha256 gives the capability token by its SHA-256 (hex),
// so the token itself is on no command line: a client with the token
// connects and is served, one with another token is refused.
func TestWebSocketTokenSHA256(t *testing.T) {
	const token = "sha256-e2e-token-value"
	sum := sha256.Sum256([]byte(token))
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, Args: []string{"--ws-auth", "capability-token", "--ws-token-sha256", hex.EncodeToString(sum[:])}})
	if code, body := upgradeStatus(t, d, "Bearer other-token"); code != http.StatusUnauthorized || body != "invalid websocket bearer token" {
		t.Fatalf("a wrong token: %d %q", code, body)
	}
	if code, body := upgradeStatus(t, d, "Bearer "+hex.EncodeToString(sum[:])); code != http.StatusUnauthorized || body != "invalid websocket bearer token" {
		t.Fatalf("the digest given as the token: %d %q", code, body)
	}
	c := d.DialWS(WSOptions{Header: http.Header{"Authorization": {"Bearer " + token}}})
	c.Initialize("authed", nil)
	WantResult(t, c.Call("config/read", map[string]any{}))
}

// --ws-auth signed-bearer-token: an HS256 JWT signed with the shared
// secret, with the issuer and audience asked for.
func TestWebSocketSignedBearerToken(t *testing.T) {
	dir := t.TempDir()
	secret := []byte(strings.Repeat("e2e-secret-", 4))
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, Args: []string{
		"--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secretFile, "--ws-issuer", "ops", "--ws-audience", "agentd",
	}})
	sign := func(claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + s
	}
	exp := time.Now().Add(time.Minute).Unix()
	for auth, want := range map[string]string{
		sign(jwt.MapClaims{"iss": "ops", "aud": "agentd", "exp": time.Now().Add(-time.Hour).Unix()}): "expired websocket jwt",
		sign(jwt.MapClaims{"iss": "other", "aud": "agentd", "exp": exp}):                             "websocket jwt issuer mismatch",
		sign(jwt.MapClaims{"iss": "ops", "aud": "other", "exp": exp}):                                "websocket jwt audience mismatch",
		"Bearer not.a.jwt": "invalid websocket jwt",
	} {
		if code, body := upgradeStatus(t, d, auth); code != http.StatusUnauthorized || body != want {
			t.Fatalf("%d %q, want 401 %q", code, body, want)
		}
	}
	c := d.DialWS(WSOptions{Header: http.Header{"Authorization": {sign(jwt.MapClaims{"iss": "ops", "aud": "agentd", "exp": exp})}}})
	c.Initialize("jwt", nil)
}

// A ws:// listener on a non-loopback address needs --ws-auth (the
// reference's refusal) unless --allow-unauthenticated; bad auth flags are
// refused with the reference's texts.
func TestWebSocketAuthStartupChecks(t *testing.T) {
	home := t.TempDir()
	code, _, stderr := run(t, home, "app-server", "--listen", "ws://0.0.0.0:0")
	if code != 1 || !strings.Contains(stderr, "refusing to start non-loopback websocket listener 0.0.0.0:0 without auth") || !strings.Contains(stderr, "--allow-unauthenticated") {
		t.Fatalf("non-loopback without auth: exit %d\n%s", code, stderr)
	}
	code, _, stderr = run(t, home, "app-server", "--listen", "ws://127.0.0.1:0", "--ws-token-sha256", strings.Repeat("0", 64))
	if code != 1 || !strings.Contains(stderr, "websocket auth flags require `--ws-auth capability-token` or `--ws-auth signed-bearer-token`") {
		t.Fatalf("flags without a mode: exit %d\n%s", code, stderr)
	}
	code, _, stderr = run(t, home, "app-server", "--ws-auth", "magic")
	if code != 2 || !strings.Contains(stderr, "--ws-auth") {
		t.Fatalf("unknown mode: exit %d\n%s", code, stderr)
	}
}
