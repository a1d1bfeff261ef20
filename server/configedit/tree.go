package configedit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/pelletier/go-toml/v2"
)

// ErrInvalidEdit is wrapped by errors about an edit that cannot apply: a
// malformed key path, a value TOML cannot hold, a path through a value
// that is not a table.
var ErrInvalidEdit = errors.New("invalid config edit")

// Parse decodes a TOML document; empty input is an empty document.
func Parse(src []byte) (map[string]any, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// Version returns the version of a document: "sha256:<hex>" of its
// compact JSON with sorted keys.
func Version(doc map[string]any) string {
	sum := sha256.Sum256(canonicalJSON(doc))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// canonicalJSON encodes v compactly, keys sorted, without HTML escaping.
func canonicalJSON(v any) []byte {
	b, err := model.MarshalNoEscape(v)
	if err != nil {
		// Documents come from the TOML decoder or FromJSON: always
		// encodable.
		panic(fmt.Sprintf("configedit: cannot encode document: %v", err))
	}
	return b
}

// Equal reports whether two documents hold the same values.
func Equal(a, b map[string]any) bool { return bytes.Equal(canonicalJSON(a), canonicalJSON(b)) }

// Leaves lists the dotted paths of a document's values that are not
// tables (arrays count as values), sorted.
func Leaves(doc map[string]any) []string {
	var out []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if sub, ok := v.(map[string]any); ok {
				walk(p, sub)
				continue
			}
			out = append(out, p)
		}
	}
	walk("", doc)
	sort.Strings(out)
	return out
}

// SplitKeyPath splits a dotted key path ("a.b.c").
func SplitKeyPath(keyPath string) ([]string, error) {
	if !utf8.ValidString(keyPath) {
		return nil, fmt.Errorf("%w: key path %q is not valid UTF-8", ErrInvalidEdit, keyPath)
	}
	parts := strings.Split(keyPath, ".")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("%w: key path %q has an empty segment", ErrInvalidEdit, keyPath)
		}
	}
	return parts, nil
}

// FromJSON converts a value decoded from JSON (encoding/json's types) to
// the document's types: whole numbers become integers, other numbers
// floats. null inside an object is kept (nil: it means "remove" to an
// upsert and is dropped by a replace); null inside an array is refused,
// TOML having no null.
func FromJSON(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool, string:
		return v, nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return int64(v), nil
		}
		return v, nil
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("%w: number %s: %v", ErrInvalidEdit, v, err)
		}
		return FromJSON(f)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			if e == nil {
				return nil, fmt.Errorf("%w: TOML arrays cannot hold null", ErrInvalidEdit)
			}
			c, err := FromJSON(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := FromJSON(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unsupported value of type %T", ErrInvalidEdit, v)
}

// withoutNulls returns v with null members of objects removed, at every
// depth.
func withoutNulls(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		if e != nil {
			out[k] = withoutNulls(e)
		}
	}
	return out
}

// clone deep-copies a document value.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = clone(e)
		}
		return out
	}
	return v
}
