package utility

import (
	"maps"

	"github.com/agentd-dev/agentd/core/model"
)

// redactLayer returns a copy of a config layer in which the credentials a
// provider table may hold literally are replaced by model.Redacted: the
// values of its http_headers and query_params whose names say they are
// credentials (Authorization, X-Api-Key, api-key, …) and its
// experimental_bearer_token, in [model_providers.*] and under each
// profile. config/read answers any client, and a client that may read
// the configuration is not thereby trusted with the keys in it. The
// reference shows them; the file itself is unchanged.
func redactLayer(doc map[string]any) map[string]any {
	out := maps.Clone(doc)
	out["model_providers"] = redactProviders(out["model_providers"])
	if out["model_providers"] == nil {
		delete(out, "model_providers")
	}
	if profiles, ok := doc["profiles"].(map[string]any); ok {
		cp := make(map[string]any, len(profiles))
		for name, p := range profiles {
			if pt, ok := p.(map[string]any); ok && pt["model_providers"] != nil {
				pt = maps.Clone(pt)
				pt["model_providers"] = redactProviders(pt["model_providers"])
				p = pt
			}
			cp[name] = p
		}
		out["profiles"] = cp
	}
	return out
}

// redactProviders redacts each table of a model_providers value.
func redactProviders(v any) any {
	providers, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(providers))
	for id, p := range providers {
		table, ok := p.(map[string]any)
		if !ok {
			out[id] = p
			continue
		}
		table = maps.Clone(table)
		for _, key := range []string{"http_headers", "query_params"} {
			if m, ok := table[key].(map[string]any); ok {
				m = maps.Clone(m)
				for name := range m {
					if model.SensitiveName(name) {
						m[name] = model.Redacted
					}
				}
				table[key] = m
			}
		}
		if _, ok := table["experimental_bearer_token"]; ok {
			table["experimental_bearer_token"] = model.Redacted
		}
		out[id] = table
	}
	return out
}
