// Package wsauth authenticates WebSocket clients the way the reference's
// --ws-auth modes do, from the Authorization: Bearer header of the upgrade
// request: a capability token (compared by its SHA-256 digest, in constant
// time) or an HS256 JWT signed with a shared secret. A refusal is an
// *Error whose text is the reference's; it never contains the token.
//
// Beyond the reference, each client gets a scope (server/scope): the
// flags' tokens are admin, a JWT may carry a "scope" claim, and
// config.toml may name more tokens with their scopes (WithTokens).
package wsauth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/scope"
	"github.com/agentd-dev/agentd/server/transport"
)

// Modes, as --ws-auth names them.
const (
	ModeCapabilityToken   = "capability-token"
	ModeSignedBearerToken = "signed-bearer-token"
)

// DefaultMaxClockSkew is the leeway on a JWT's exp and nbf when
// --ws-max-clock-skew-seconds is not given (the reference's).
const DefaultMaxClockSkew = 30 * time.Second

// maxSkew bounds --ws-max-clock-skew-seconds (a day): more is a mistake.
const maxSkew = 24 * time.Hour

// MinSecretBytes is the shortest shared secret accepted.
const MinSecretBytes = 32

// Error is why a request was refused (HTTP 401), in the reference's
// words.
type Error struct{ Reason string }

func (e *Error) Error() string { return e.Reason }

var (
	errMissing       = &Error{"missing websocket bearer token"}
	errHeader        = &Error{"invalid authorization header"}
	errBadToken      = &Error{"invalid websocket bearer token"}
	errBadJWT        = &Error{"invalid websocket jwt"}
	errExpired       = &Error{"expired websocket jwt"}
	errNotYetValid   = &Error{"websocket jwt is not valid yet"}
	errIssuer        = &Error{"websocket jwt issuer mismatch"}
	errAudience      = &Error{"websocket jwt audience mismatch"}
	errScopeClaim    = &Error{"invalid websocket jwt scope: one of read, operate, admin"}
	errMissingSecret = errors.New("`--ws-shared-secret-file` is required when `--ws-auth signed-bearer-token` is set")
)

// Authenticator checks an upgrade request.
type Authenticator interface {
	// Authenticate returns who a client that may connect is (its scope,
	// a name for logs), or an *Error.
	Authenticate(r *http.Request) (transport.Identity, error)
	// Mode is the --ws-auth mode.
	Mode() string
}

// ScopeClaim is the JWT claim that carries a signed bearer token's scope
// ("read", "operate" or "admin"); a token without it is admin.
const ScopeClaim = "scope"

// Flags are the --ws-* flags as given; zero values are absent.
type Flags struct {
	Mode                  string
	TokenFile             string
	TokenSHA256           string
	SharedSecretFile      string
	Issuer, Audience      string
	MaxClockSkewSeconds   uint64
	MaxClockSkewSecondsOK bool // --ws-max-clock-skew-seconds was given
}

// New checks the flags as the reference does, reads the files they name,
// and returns the authenticator; nil (and no error) when no mode is set.
// Errors carry the reference's texts.
func New(f Flags) (Authenticator, error) {
	jwtFlags := f.SharedSecretFile != "" || f.Issuer != "" || f.Audience != "" || f.MaxClockSkewSecondsOK
	switch f.Mode {
	case "":
		if jwtFlags || f.TokenFile != "" || f.TokenSHA256 != "" {
			return nil, errors.New("websocket auth flags require `--ws-auth capability-token` or `--ws-auth signed-bearer-token`")
		}
		return nil, nil
	case ModeCapabilityToken:
		if jwtFlags {
			return nil, errors.New("`--ws-shared-secret-file`, `--ws-issuer`, `--ws-audience`, and `--ws-max-clock-skew-seconds` require `--ws-auth signed-bearer-token`")
		}
		return newCapability(f.TokenFile, f.TokenSHA256)
	case ModeSignedBearerToken:
		if f.TokenFile != "" || f.TokenSHA256 != "" {
			return nil, errors.New("`--ws-token-file` and `--ws-token-sha256` require `--ws-auth capability-token`, not `signed-bearer-token`")
		}
		if f.SharedSecretFile == "" {
			return nil, errMissingSecret
		}
		skew := DefaultMaxClockSkew
		if f.MaxClockSkewSecondsOK {
			if f.MaxClockSkewSeconds > uint64(maxSkew/time.Second) {
				return nil, fmt.Errorf("--ws-max-clock-skew-seconds must be at most %d", maxSkew/time.Second)
			}
			skew = time.Duration(f.MaxClockSkewSeconds) * time.Second
		}
		secret, err := os.ReadFile(f.SharedSecretFile)
		if err != nil {
			return nil, fmt.Errorf("reading the signed websocket bearer secret %s: %w", f.SharedSecretFile, err)
		}
		if len(secret) < MinSecretBytes {
			return nil, fmt.Errorf("signed websocket bearer secret %s must be at least %d bytes", f.SharedSecretFile, MinSecretBytes)
		}
		return &signedBearer{secret: secret, issuer: f.Issuer, audience: f.Audience, skew: skew}, nil
	default:
		return nil, fmt.Errorf("invalid value %q for --ws-auth: one of %s, %s", f.Mode, ModeCapabilityToken, ModeSignedBearerToken)
	}
}

// bearer extracts the token of an Authorization: Bearer header (the
// scheme in any case).
func bearer(r *http.Request) (string, error) {
	h, ok := r.Header["Authorization"]
	if !ok || len(h) == 0 {
		return "", errMissing
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(h[0]), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", errHeader
	}
	return token, nil
}

// capability accepts the one token whose SHA-256 digest it holds.
type capability struct{ digest [sha256.Size]byte }

func newCapability(file, hexDigest string) (*capability, error) {
	switch {
	case file != "" && hexDigest != "":
		return nil, errors.New("`--ws-token-file` and `--ws-token-sha256` are mutually exclusive")
	case file == "" && hexDigest == "":
		return nil, errors.New("`--ws-token-file` or `--ws-token-sha256` is required when `--ws-auth capability-token` is set")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the websocket capability token %s: %w", file, err)
		}
		token := bytes.TrimSpace(b)
		if len(token) == 0 {
			return nil, fmt.Errorf("websocket capability token file %s is empty", file)
		}
		return &capability{digest: sha256.Sum256(token)}, nil
	}
	d, err := hex.DecodeString(hexDigest)
	if err != nil || len(d) != sha256.Size {
		return nil, errors.New("--ws-token-sha256 must be a 64-character hex SHA-256 digest")
	}
	c := &capability{}
	copy(c.digest[:], d)
	return c, nil
}

func (c *capability) Mode() string { return ModeCapabilityToken }

// Authenticate admits the flags' token, as admin: the reference's tokens
// may do everything.
func (c *capability) Authenticate(r *http.Request) (transport.Identity, error) {
	token, err := bearer(r)
	if err != nil {
		return transport.Identity{}, err
	}
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(sum[:], c.digest[:]) != 1 {
		return transport.Identity{}, errBadToken
	}
	return transport.Identity{Scope: scope.Admin, Name: "--ws-token"}, nil
}

// signedBearer accepts HS256 JWTs signed with the shared secret, with an
// exp, within the clock skew, and with the issuer and audience when those
// are set.
type signedBearer struct {
	secret           []byte
	issuer, audience string
	skew             time.Duration
}

func (s *signedBearer) Mode() string { return ModeSignedBearerToken }

// Authenticate admits a valid JWT with the scope its claim names (admin
// without one; a claim that names no scope is refused).
func (s *signedBearer) Authenticate(r *http.Request) (transport.Identity, error) {
	token, err := bearer(r)
	if err != nil {
		return transport.Identity{}, err
	}
	claims, err := s.parse(token)
	if err != nil {
		return transport.Identity{}, err
	}
	id := transport.Identity{Scope: scope.Admin, Name: "signed bearer token"}
	if sub, ok := claims["sub"].(string); ok && sub != "" {
		id.Name += " " + strconv.Quote(protocol.CutTo(sub, 128))
	}
	if v, ok := claims[ScopeClaim]; ok {
		name, _ := v.(string)
		sc, err := scope.Parse(name)
		if err != nil {
			return transport.Identity{}, errScopeClaim
		}
		id.Scope = sc
	}
	return id, nil
}

// parse checks a JWT and returns its claims, or the reference's refusal.
func (s *signedBearer) parse(token string) (jwt.MapClaims, error) {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(s.skew),
	}
	if s.issuer != "" {
		opts = append(opts, jwt.WithIssuer(s.issuer))
	}
	if s.audience != "" {
		opts = append(opts, jwt.WithAudience(s.audience))
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return s.secret, nil }, opts...)
	switch {
	case err == nil:
		return claims, nil
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenMalformed), errors.Is(err, jwt.ErrTokenUnverifiable):
		return nil, errBadJWT
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		// Signed, but a claim is missing: no exp makes it invalid; a
		// missing iss or aud is a mismatch, as the reference says.
		if _, ok := claims["exp"]; !ok {
			return nil, errBadJWT
		}
		if _, ok := claims["iss"]; !ok && s.issuer != "" {
			return nil, errIssuer
		}
		if _, ok := claims["aud"]; !ok && s.audience != "" {
			return nil, errAudience
		}
		return nil, errBadJWT
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, errExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return nil, errNotYetValid
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return nil, errIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return nil, errAudience
	}
	return nil, errBadJWT
}
