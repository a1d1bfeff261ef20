package utility

import (
	"reflect"
	"testing"

	"github.com/agentd-dev/agentd/core/model"
)

// Credential values of provider tables are redacted, at the top and under
// profiles; everything else, and the document given, is left as it is.
func TestRedactLayer(t *testing.T) {
	provider := func() map[string]any {
		return map[string]any{
			"base_url":                  "http://127.0.0.1:1/v1",
			"env_key":                   "MY_KEY",
			"http_headers":              map[string]any{"Authorization": "Bearer tok-123456", "X-Team": "core"},
			"query_params":              map[string]any{"api-key": "q-123456", "api-version": "2025"},
			"env_http_headers":          map[string]any{"X-Auth": "VAR_NAME"},
			"experimental_bearer_token": "bearer-123456",
		}
	}
	doc := map[string]any{
		"model":           "m",
		"model_providers": map[string]any{"p": provider()},
		"profiles":        map[string]any{"work": map[string]any{"model": "w", "model_providers": map[string]any{"p": provider()}}},
	}
	orig := map[string]any{
		"model":           "m",
		"model_providers": map[string]any{"p": provider()},
		"profiles":        map[string]any{"work": map[string]any{"model": "w", "model_providers": map[string]any{"p": provider()}}},
	}
	got := redactLayer(doc)
	if !reflect.DeepEqual(doc, orig) {
		t.Fatal("the document given was changed")
	}
	want := provider()
	want["http_headers"] = map[string]any{"Authorization": model.Redacted, "X-Team": "core"}
	want["query_params"] = map[string]any{"api-key": model.Redacted, "api-version": "2025"}
	want["experimental_bearer_token"] = model.Redacted
	for _, p := range []any{lookup(got, "model_providers", "p"), lookup(got, "profiles", "work", "model_providers", "p")} {
		if !reflect.DeepEqual(p, want) {
			t.Fatalf("redacted provider = %v, want %v", p, want)
		}
	}
	if got["model"] != "m" || lookup(got, "profiles", "work", "model") != "w" {
		t.Fatalf("other keys changed: %v", got)
	}
}

func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}
