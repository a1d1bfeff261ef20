package config

import (
	"maps"
	"time"

	"github.com/agentd-dev/agentd/core/model"
)

// Built-in provider ids.
const (
	// DemoProviderID is the offline demo provider: no network, no key.
	// Select it with model_provider = "demo" (`make run` does).
	DemoProviderID = "demo"
	// OpenAIProviderID is the OpenAI Responses API, the default provider
	// as in the reference. Its key is the one stored by account/login/start
	// (<home>/auth.json), else $OPENAI_API_KEY.
	OpenAIProviderID = "openai"
)

// builtinProviders returns the providers every configuration has, with
// defaults applied and keys resolved through getenv.
func builtinProviders(getenv func(string) string) map[string]model.Provider {
	ps := map[string]model.Provider{
		DemoProviderID: {
			ID:          DemoProviderID,
			Name:        "Demo (offline)",
			WireAPI:     "responses",
			NoWebSearch: true,
		},
		OpenAIProviderID: {
			ID:                 OpenAIProviderID,
			Name:               "OpenAI",
			BaseURL:            "https://api.openai.com/v1",
			EnvKey:             "OPENAI_API_KEY",
			WireAPI:            "responses",
			RequiresOpenAIAuth: true,
		},
	}
	for id, p := range ps {
		ps[id] = finishProvider(withRetryDefaults(p), getenv)
	}
	return ps
}

// withRetryDefaults sets the reference's retry and timeout defaults; a
// provider table applied afterwards may change them, to 0 included.
func withRetryDefaults(p model.Provider) model.Provider {
	p.RequestMaxRetries = model.DefaultRequestMaxRetries
	p.StreamMaxRetries = model.DefaultStreamMaxRetries
	p.StreamIdleTimeout = model.DefaultStreamIdleTimeout
	return p
}

// finishProvider fills the name and wire API when left out and resolves
// the API key from the environment.
func finishProvider(p model.Provider, getenv func(string) string) model.Provider {
	if p.Name == "" {
		p.Name = p.ID
	}
	if p.WireAPI == "" {
		p.WireAPI = "responses"
	}
	p.APIKey = ""
	if p.EnvKey != "" {
		p.APIKey = getenv(p.EnvKey)
	}
	if len(p.EnvHTTPHeaders) > 0 {
		// A header whose variable is unset or empty is left out.
		headers := make(map[string]string, len(p.HTTPHeaders)+len(p.EnvHTTPHeaders))
		maps.Copy(headers, p.HTTPHeaders)
		for name, variable := range p.EnvHTTPHeaders {
			if v := getenv(variable); v != "" {
				headers[name] = v
			}
		}
		p.HTTPHeaders = headers
	}
	return p
}

// applyProviderTable overlays the keys present in a [model_providers.<id>]
// table on p.
func applyProviderTable(p model.Provider, t providerTable) model.Provider {
	if t.Name != nil {
		p.Name = *t.Name
	}
	if t.BaseURL != nil {
		p.BaseURL = *t.BaseURL
	}
	if t.EnvKey != nil {
		p.EnvKey = *t.EnvKey
	}
	if t.WireAPI != nil {
		p.WireAPI = *t.WireAPI
	}
	if t.RequiresOpenAIAuth != nil {
		p.RequiresOpenAIAuth = *t.RequiresOpenAIAuth
	}
	if t.RequestMaxRetries != nil {
		p.RequestMaxRetries = int(*t.RequestMaxRetries)
	}
	if t.StreamMaxRetries != nil {
		p.StreamMaxRetries = int(*t.StreamMaxRetries)
	}
	if t.StreamIdleTimeoutMS != nil {
		p.StreamIdleTimeout = time.Duration(*t.StreamIdleTimeoutMS) * time.Millisecond
	}
	if t.HTTPHeaders != nil {
		p.HTTPHeaders = t.HTTPHeaders
	}
	if t.EnvHTTPHeaders != nil {
		p.EnvHTTPHeaders = t.EnvHTTPHeaders
	}
	if t.QueryParams != nil {
		p.QueryParams = t.QueryParams
	}
	if t.SupportsWebSearch != nil {
		p.NoWebSearch = !*t.SupportsWebSearch
	}
	return p
}
