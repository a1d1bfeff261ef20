package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/protocol"
)

// unknownKeys lists the dotted keys of doc that the type t (a struct with
// toml tags) does not know, and the feature flags that do not exist,
// sorted.
func unknownKeys(doc map[string]any, t reflect.Type) []string {
	var out []string
	walkKeys(doc, t, "", &out)
	if features, ok := doc["features"].(map[string]any); ok {
		for name := range features {
			if !KnownFeature(name) {
				out = append(out, "features."+name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// maxWarnedKeys bounds the unknown keys one warning names; the rest are
// counted. The warning goes to every new connection (configWarning) and
// to the log at each reload.
const maxWarnedKeys = 20

// KeyText is a configuration key as a warning, an error or a log line
// repeats it: control characters and invalid UTF-8 escaped (a key may be
// any quoted TOML string, NUL included), then cut (protocol.Cut).
func KeyText(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); {
		r, size := utf8.DecodeRuneInString(k[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, k[i])
		case unicode.IsControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(k[i : i+size])
		}
		i += size
	}
	return protocol.Cut(b.String())
}

// UnknownFieldError is a key config.toml (or --config) has that agentd
// does not know, under --strict-config: the reference's error.
type UnknownFieldError struct {
	File string
	// Line and Column locate the key in File (1-based); 0 when unknown.
	Line, Column int
	Key          string
}

func (e *UnknownFieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: unknown configuration field `%s`", e.File, e.Line, e.Column, KeyText(e.Key))
	}
	return fmt.Sprintf("%s: unknown configuration field `%s`", e.File, KeyText(e.Key))
}

// firstUnknownField returns the error for the unknown key that comes first
// in the file's text.
func firstUnknownField(file string, text []byte, unknown []string) *UnknownFieldError {
	first := &UnknownFieldError{File: file, Key: unknown[0]}
	for _, k := range unknown {
		line, col := keyPosition(text, k)
		if line > 0 && (first.Line == 0 || line < first.Line) {
			first = &UnknownFieldError{File: file, Line: line, Column: col, Key: k}
		}
	}
	return first
}

// keyPosition finds where a dotted key is set in TOML text: the line of
// its table header (or of a table inside it), or of the assignment that
// sets it (or something inside it, or an inline table around it), and the
// column where that starts. It reads headers and
// assignments line by line, which is enough for a position in an error;
// 0, 0 when it finds none.
func keyPosition(text []byte, key string) (line, col int) {
	table := ""
	for i, raw := range strings.Split(string(text), "\n") {
		trimmed := strings.TrimLeft(raw, " \t")
		indent := len(raw) - len(trimmed)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		case strings.HasPrefix(trimmed, "["):
			name := strings.Trim(strings.TrimSpace(strings.SplitN(trimmed, "#", 2)[0]), "[]")
			table = normalizeKey(name)
			if covers(key, table) { // the unknown table itself, or one in it
				return i + 1, indent + 1
			}
		default:
			lhs, _, ok := strings.Cut(trimmed, "=")
			if !ok {
				continue
			}
			full := normalizeKey(lhs)
			if table != "" {
				full = table + "." + full
			}
			if covers(full, key) || covers(key, full) {
				return i + 1, indent + 1
			}
		}
	}
	return 0, 0
}

// normalizeKey turns a TOML key as written (spaces, quotes around parts)
// into its dotted form.
func normalizeKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// covers reports whether key is prefix or lies inside it.
func covers(prefix, key string) bool {
	return prefix == key || strings.HasPrefix(key, prefix+".")
}

func walkKeys(v any, t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	table, ok := v.(map[string]any)
	if !ok {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
		for k, sub := range table {
			ft, known := fields[k]
			if !known {
				*out = append(*out, prefix+k)
				continue
			}
			walkKeys(sub, ft, prefix+k+".", out)
		}
	case reflect.Map:
		for k, sub := range table {
			walkKeys(sub, t.Elem(), prefix+k+".", out)
		}
	}
}
