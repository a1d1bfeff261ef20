package config

import (
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// parseOverride turns "a.b.c=value" into a nested table {a: {b: {c: v}}}.
// The value is read as a TOML value (so 4 is an integer, true a boolean,
// ["x"] an array); what does not parse as TOML is taken as a literal
// string, like the reference's -c.
func parseOverride(s string) (map[string]any, error) {
	key, raw, ok := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return nil, fmt.Errorf("invalid --config %q: want key=value", s)
	}
	parts := strings.Split(key, ".")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("invalid --config %q: empty key segment", s)
		}
	}
	value := parseTOMLValue(strings.TrimSpace(raw))
	root := map[string]any{}
	cur := root
	for _, p := range parts[:len(parts)-1] {
		next := map[string]any{}
		cur[p] = next
		cur = next
	}
	cur[parts[len(parts)-1]] = value
	return root, nil
}

func parseTOMLValue(raw string) any {
	var doc map[string]any
	if err := toml.Unmarshal([]byte("v = "+raw), &doc); err == nil {
		if v, ok := doc["v"]; ok {
			return v
		}
	}
	return raw
}

// merge copies src into dst, descending into tables present in both.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				merge(dv, sv)
				continue
			}
		}
		dst[k] = v
	}
}

// ParseOverrideValue reads the value of a -c key=value as -c reads it: a
// TOML value, or the literal text when it is not one (for agentd exec,
// which sends a remote daemon the overrides as thread/start's config).
func ParseOverrideValue(raw string) any { return parseTOMLValue(strings.TrimSpace(raw)) }
