package protocol

// Accounts: how the server authenticates upstream (account/*).

// GetAccountParams are the params of account/read.
type GetAccountParams struct {
	RefreshToken bool `json:"refreshToken,omitempty"`
}

// GetAccountResponse is the result of account/read.
type GetAccountResponse struct {
	Account            *Account          `json:"account"`
	UserID             *string           `json:"userId"`
	RequiresOpenaiAuth bool              `json:"requiresOpenaiAuth"`
	WorkspaceRouting   *WorkspaceRouting `json:"workspaceRouting" wire:"experimental"`
}

// Account is how the server authenticates upstream, tagged by "type".
type Account struct {
	APIKey        *Empty          `variant:"apiKey"`
	ChatGPT       *ChatGPTAccount `variant:"chatgpt"`
	AmazonBedrock *BedrockAccount `variant:"amazonBedrock"`
	GCP           *Empty          `variant:"gcp"`
}

// MarshalJSON encodes the union (see union.go).
func (a Account) MarshalJSON() ([]byte, error) { return marshalUnion(&a) }

// UnmarshalJSON decodes the union (see union.go).
func (a *Account) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, a) }

// ChatGPTAccount is a ChatGPT login.
type ChatGPTAccount struct {
	Email         *string `json:"email" wire:"required"`
	PlanType      string  `json:"planType"`
	WorkspaceName *string `json:"workspaceName,omitempty"`
}

// BedrockAccount is Amazon Bedrock credentials.
type BedrockAccount struct {
	UsesCodexManagedCredentials bool `json:"usesCodexManagedCredentials,omitempty"`
}

// WorkspaceRouting says where a workspace's requests go.
type WorkspaceRouting struct {
	AccountRoutingOverride string `json:"accountRoutingOverride"`
	BackendOrigin          string `json:"backendOrigin"`
	ChatgptAccountID       string `json:"chatgptAccountId"`
}

// LoginAccountParams are the params of account/login/start, tagged by
// "type". agentd signs in with an API key only; the other variants are
// decoded (so that bad params get the reference's errors) and refused.
type LoginAccountParams struct {
	APIKey                  *APIKeyLogin            `variant:"apiKey"`
	ChatGPT                 *ChatGPTLogin           `variant:"chatgpt"`
	ChatGPTDeviceCode       *Empty                  `variant:"chatgptDeviceCode"`
	ChatGPTAuthTokens       *ChatGPTAuthTokensLogin `variant:"chatgptAuthTokens"`
	AmazonBedrock           *BedrockLogin           `variant:"amazonBedrock"`
	AmazonBedrockAccessKeys *BedrockAccessKeysLogin `variant:"amazonBedrockAccessKeys"`
}

// MarshalJSON encodes the union (see union.go).
func (p LoginAccountParams) MarshalJSON() ([]byte, error) { return marshalUnion(&p) }

// UnmarshalJSON decodes the union (see union.go).
func (p *LoginAccountParams) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, p) }

// APIKeyLogin is a sign-in with an OpenAI API key.
type APIKeyLogin struct {
	APIKey string `json:"apiKey"`
}

// ChatGPTLogin is a browser sign-in to ChatGPT.
type ChatGPTLogin struct {
	AppBrand                  *LoginAppBrand `json:"appBrand,omitempty"`
	CodexStreamlinedLogin     bool           `json:"codexStreamlinedLogin,omitempty"`
	UseHostedLoginSuccessPage bool           `json:"useHostedLoginSuccessPage,omitempty"`
}

// LoginAppBrand is the brand a ChatGPT sign-in page shows.
type LoginAppBrand string

// Login brands.
const (
	LoginBrandCodex   LoginAppBrand = "codex"
	LoginBrandChatGPT LoginAppBrand = "chatgpt"
)

func (LoginAppBrand) wireValues() []string { return values(LoginBrandCodex, LoginBrandChatGPT) }

// ChatGPTAuthTokensLogin is ChatGPT tokens supplied by the client.
type ChatGPTAuthTokensLogin struct {
	AccessToken      string  `json:"accessToken"`
	ChatgptAccountID string  `json:"chatgptAccountId"`
	ChatgptPlanType  *string `json:"chatgptPlanType,omitempty"`
}

// BedrockLogin is an Amazon Bedrock API key.
type BedrockLogin struct {
	APIKey string `json:"apiKey"`
	Region string `json:"region"`
}

// BedrockAccessKeysLogin is Amazon Bedrock AWS access keys.
type BedrockAccessKeysLogin struct {
	AccessKeyID     string  `json:"accessKeyId"`
	Region          string  `json:"region"`
	SecretAccessKey string  `json:"secretAccessKey"`
	SessionToken    *string `json:"sessionToken,omitempty"`
}

// LoginAccountResponse is the result of account/login/start: agentd
// answers the API-key sign-in only.
type LoginAccountResponse struct {
	APIKey *Empty `variant:"apiKey"`
}

// MarshalJSON encodes the union (see union.go).
func (r LoginAccountResponse) MarshalJSON() ([]byte, error) { return marshalUnion(&r) }

// UnmarshalJSON decodes the union (see union.go).
func (r *LoginAccountResponse) UnmarshalJSON(b []byte) error { return unmarshalUnion(b, r) }

// CancelLoginAccountParams are the params of account/login/cancel.
type CancelLoginAccountParams struct {
	LoginID string `json:"loginId"`
}

// CancelLoginAccountResponse is the result of account/login/cancel.
type CancelLoginAccountResponse struct {
	Status CancelLoginStatus `json:"status"`
}

// CancelLoginStatus says what account/login/cancel found.
type CancelLoginStatus string

// Cancel outcomes.
const (
	CancelLoginCanceled CancelLoginStatus = "canceled"
	CancelLoginNotFound CancelLoginStatus = "notFound"
)

func (CancelLoginStatus) wireValues() []string {
	return values(CancelLoginCanceled, CancelLoginNotFound)
}

// GetAccountRateLimitsParams are the params of account/rateLimits/read.
type GetAccountRateLimitsParams struct {
	ExcludeResetCreditDetails bool `json:"excludeResetCreditDetails,omitempty"`
	SupportsLunaReserve       bool `json:"supportsLunaReserve,omitempty"`
}

// GetAccountRateLimitsResponse is the result of account/rateLimits/read.
// The reference reads it from ChatGPT's usage endpoint; agentd answers
// with what the provider's rate-limit headers last said (see
// docs/compatibility.md), so the backend-only fields are left out.
type GetAccountRateLimitsResponse struct {
	RateLimits RateLimitSnapshot `json:"rateLimits"`
	// RateLimitsByLimitID has the last snapshot of each bucket.
	RateLimitsByLimitID map[string]RateLimitSnapshot `json:"rateLimitsByLimitId,omitempty"`
}

// AuthMode is how the server authenticates upstream.
type AuthMode string

// AuthModeAPIKey is an API key stored by account/login/start, the one
// mode agentd has.
const AuthModeAPIKey AuthMode = "apikey"

func (AuthMode) wireValues() []string { return values(AuthModeAPIKey) }

// AccountUpdatedNotification (account/updated) says the sign-in changed;
// AuthMode is null after a sign-out.
type AccountUpdatedNotification struct {
	AuthMode *AuthMode `json:"authMode"`
	PlanType *string   `json:"planType"`
}

// AccountLoginCompletedNotification (account/login/completed) ends a
// sign-in.
type AccountLoginCompletedNotification struct {
	LoginID              *string `json:"loginId"`
	Success              bool    `json:"success"`
	Error                *string `json:"error"`
	OnboardingEntrypoint *string `json:"onboardingEntrypoint"`
}

// AccountRateLimitsUpdatedNotification (account/rateLimits/updated) is
// the rate-limit snapshot the provider reported with a model response.
type AccountRateLimitsUpdatedNotification struct {
	RateLimits RateLimitSnapshot `json:"rateLimits"`
}

// RateLimitSnapshot is one rate-limit bucket. Every field is written,
// null when unknown.
type RateLimitSnapshot struct {
	LimitID              *string          `json:"limitId"`
	LimitName            *string          `json:"limitName"`
	NormalModelSlug      *string          `json:"normalModelSlug"`
	Primary              *RateLimitWindow `json:"primary"`
	Secondary            *RateLimitWindow `json:"secondary"`
	Credits              *CreditsSnapshot `json:"credits"`
	IndividualLimit      any              `json:"individualLimit" wire:"optional"` // never set by agentd
	SpendControlReached  *bool            `json:"spendControlReached"`
	PlanType             *string          `json:"planType"`
	RateLimitReachedType *string          `json:"rateLimitReachedType"`
}

// RateLimitWindow is the use of one rate-limit window.
type RateLimitWindow struct {
	UsedPercent        int32  `json:"usedPercent"`
	WindowDurationMins *int64 `json:"windowDurationMins"`
	ResetsAt           *int64 `json:"resetsAt"` // unix seconds
}

// CreditsSnapshot is the account's credits.
type CreditsSnapshot struct {
	HasCredits bool    `json:"hasCredits"`
	Unlimited  bool    `json:"unlimited"`
	Balance    *string `json:"balance"`
}
