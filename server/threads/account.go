package threads

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
)

// The account methods. agentd signs in with an OpenAI API key only, kept
// in <home>/auth.json (server/auth). A provider that requires OpenAI auth
// (the built-in openai, or requires_openai_auth = true) sends the stored
// key, else its env_key variable; see apiKeyFor. Any connected client may
// sign in or out (docs/protocol.md, Accounts).

// accountRead reports the sign-in the configured provider uses: an
// API-key account when a key is stored and the provider takes OpenAI
// auth. A key from the environment is not an account, as in the
// reference.
func (sv *service) accountRead(_ context.Context, _ *rpc.Request, _ *protocol.GetAccountParams) (*protocol.GetAccountResponse, error) {
	p := sv.config().Provider
	resp := protocol.GetAccountResponse{RequiresOpenaiAuth: p.RequiresOpenAIAuth}
	if p.RequiresOpenAIAuth && sv.auth.APIKey() != "" {
		resp.Account = &protocol.Account{APIKey: &protocol.Empty{}}
	}
	return &resp, nil
}

// apiKeyOnly is the error for every sign-in but the API-key one.
func apiKeyOnly(what string) error {
	return protocol.InvalidRequest("agentd does not support %s sign-in; sign in with an API key (account/login/start with type \"apiKey\") or set OPENAI_API_KEY", what)
}

// accountLoginStart stores an API key and tells every connection; the
// model clients use it from their next request on.
func (sv *service) accountLoginStart(_ context.Context, r *rpc.Request, p *protocol.LoginAccountParams) (*protocol.LoginAccountResponse, error) {
	switch {
	case p.ChatGPT != nil, p.ChatGPTDeviceCode != nil, p.ChatGPTAuthTokens != nil:
		return nil, apiKeyOnly("ChatGPT")
	case p.AmazonBedrock != nil, p.AmazonBedrockAccessKeys != nil:
		return nil, apiKeyOnly("Amazon Bedrock")
	}
	key := strings.TrimSpace(p.APIKey.APIKey)
	if key == "" {
		return nil, protocol.InvalidRequest("apiKey must not be empty")
	}
	if strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		// It could never be sent in a header; the text does not quote it.
		return nil, protocol.InvalidRequest("apiKey must not contain spaces or control characters")
	}
	if err := sv.auth.SaveAPIKey(key); err != nil {
		// The error names the file, never the key.
		r.Logger().Error("cannot store the API key", zap.Error(err))
		return nil, fmt.Errorf("cannot store the API key: %w", err)
	}
	r.Logger().Info("signed in with an API key", zap.String("file", sv.auth.Path()))
	sv.rateLimits.reset() // another account's limits, maybe
	mode := protocol.AuthModeAPIKey
	r.ThenBroadcast("account/login/completed", protocol.AccountLoginCompletedNotification{Success: true})
	r.ThenBroadcast("account/updated", protocol.AccountUpdatedNotification{AuthMode: &mode})
	return &protocol.LoginAccountResponse{APIKey: &protocol.Empty{}}, nil
}

// accountLoginCancel: an API-key sign-in completes at once, so there is
// never a sign-in to cancel.
func accountLoginCancel(_ context.Context, _ *rpc.Request, p *protocol.CancelLoginAccountParams) (*protocol.CancelLoginAccountResponse, error) {
	if _, err := uuid.Parse(p.LoginID); err != nil {
		return nil, protocol.InvalidRequest("invalid login id: %s", protocol.Cut(p.LoginID))
	}
	return &protocol.CancelLoginAccountResponse{Status: protocol.CancelLoginNotFound}, nil
}

// accountLogout removes the stored key and tells every connection, also
// when there was none (as the reference).
func (sv *service) accountLogout(_ context.Context, r *rpc.Request, _ *protocol.Empty) (*protocol.Empty, error) {
	if err := sv.auth.Remove(); err != nil {
		r.Logger().Error("cannot remove the stored API key", zap.Error(err))
		return nil, fmt.Errorf("cannot remove the stored API key: %w", err)
	}
	r.Logger().Info("signed out", zap.String("file", sv.auth.Path()))
	sv.rateLimits.reset()
	r.ThenBroadcast("account/updated", protocol.AccountUpdatedNotification{})
	return &protocol.Empty{}, nil
}

// accountRateLimitsRead answers with what the provider's rate-limit
// headers last said (as account/rateLimits/updated did). Before any
// response carried them, the errors are the reference's (its usage
// endpoint needs a ChatGPT sign-in, which agentd does not have).
func (sv *service) accountRateLimitsRead(context.Context, *rpc.Request, *protocol.GetAccountRateLimitsParams) (*protocol.GetAccountRateLimitsResponse, error) {
	if seen := sv.rateLimits.read(); seen != nil {
		return seen, nil
	}
	if sv.auth.APIKey() != "" {
		return nil, protocol.InvalidRequest("chatgpt authentication required to read rate limits")
	}
	return nil, protocol.InvalidRequest("codex account authentication required to read rate limits")
}

// apiKeyFor returns where a provider's model client gets its key for each
// request: for a provider that takes OpenAI auth, the stored key, else
// its env_key variable's value (read at startup); nil for the others,
// which use the latter only.
func (sv *service) apiKeyFor(p model.Provider) func() string {
	if !p.RequiresOpenAIAuth {
		return nil
	}
	return func() string {
		if k := sv.auth.APIKey(); k != "" {
			return k
		}
		return p.APIKey
	}
}
