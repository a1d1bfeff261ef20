package configedit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Edit is one change to a document.
type Edit struct {
	// KeyPath is the dotted path of the key ("tools.web_search").
	KeyPath string
	// Value is the new value as decoded from JSON; nil removes the key.
	Value any
	// Upsert merges an object into an existing table (members set to
	// null are removed); without it the value replaces what was there.
	Upsert bool
}

// Result is an edited file.
type Result struct {
	// Text is the new file content.
	Text []byte
	// Doc is the new document, and Version its version.
	Doc     map[string]any
	Version string
	// InPlace is false when the file had to be written anew from the
	// document, losing its comments and layout.
	InPlace bool
}

// step is an edit with its path split and its value converted.
type step struct {
	path   []string
	value  any
	upsert bool
}

// Apply applies edits, in order, to the TOML text src. A malformed src is
// an error from the TOML decoder; an edit that cannot apply wraps
// ErrInvalidEdit. Either way nothing is returned.
func Apply(src []byte, edits []Edit) (*Result, error) {
	doc, err := Parse(src)
	if err != nil {
		return nil, err
	}
	want := clone(doc).(map[string]any)
	steps := make([]step, 0, len(edits))
	for _, e := range edits {
		path, err := SplitKeyPath(e.KeyPath)
		if err != nil {
			return nil, err
		}
		v, err := FromJSON(e.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.KeyPath, err)
		}
		if err := applyDoc(want, path, v, e.Upsert); err != nil {
			return nil, err
		}
		steps = append(steps, step{path: path, value: v, upsert: e.Upsert})
	}
	return settle(want, func() ([]byte, error) { return editText(src, steps) })
}

// settle is the result for the intended document want: the first of the
// edited texts that reads back as exactly want, in place, or else want
// written anew (its comments and layout lost).
func settle(want map[string]any, texts ...func() ([]byte, error)) (*Result, error) {
	res := &Result{Doc: want, Version: Version(want)}
	for _, text := range texts {
		t, err := text()
		if err != nil {
			continue
		}
		if got, err := Parse(t); err == nil && Equal(got, want) {
			res.Text, res.InPlace = t, true
			return res, nil
		}
	}
	t, err := toml.Marshal(want)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidEdit, err)
	}
	res.Text = t
	return res, nil
}

// applyDoc applies one edit to a document.
func applyDoc(doc map[string]any, path []string, v any, upsert bool) error {
	parent := doc
	for i, k := range path[:len(path)-1] {
		next, ok := parent[k]
		if !ok {
			if v == nil {
				return nil // nothing to remove
			}
			m := map[string]any{}
			parent[k] = m
			parent = m
			continue
		}
		m, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("%w: %s is not a table", ErrInvalidEdit, strings.Join(path[:i+1], "."))
		}
		parent = m
	}
	leaf := path[len(path)-1]
	if v == nil {
		delete(parent, leaf)
		return nil
	}
	if upsert {
		if old, ok := parent[leaf].(map[string]any); ok {
			if nv, ok := v.(map[string]any); ok {
				mergeInto(old, nv)
				return nil
			}
		}
	}
	parent[leaf] = withoutNulls(v)
	return nil
}

// mergeInto merges src into dst: tables merge, null removes, anything
// else replaces.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		switch {
		case v == nil:
			delete(dst, k)
		default:
			old, oldIsMap := dst[k].(map[string]any)
			nv, newIsMap := v.(map[string]any)
			if oldIsMap && newIsMap {
				mergeInto(old, nv)
			} else {
				dst[k] = withoutNulls(v)
			}
		}
	}
}

// editText applies the steps to the text in place; errRewrite means one
// of them cannot be done that way.
func editText(src []byte, steps []step) ([]byte, error) {
	text := append([]byte(nil), src...)
	for _, s := range steps {
		var err error
		if text, err = applyStep(text, s.path, s.value, s.upsert); err != nil {
			return nil, err
		}
	}
	return text, nil
}

// errRewrite says an edit cannot be made in place.
var errRewrite = errors.New("configedit: edit needs a rewrite")

// MergeTable merges values (keys to scalars) into the table at path, whose
// keys may hold dots ([projects."/srv/a.b"]), creating it: a table the
// text does not have yet is appended at its end under its own header, as
// the reference writes one; otherwise the edit is Apply's upsert.
func MergeTable(src []byte, path []string, values map[string]any) (*Result, error) {
	if len(path) == 0 {
		return nil, fmt.Errorf("%w: no table", ErrInvalidEdit)
	}
	doc, err := Parse(src)
	if err != nil {
		return nil, err
	}
	v, err := FromJSON(values)
	if err != nil {
		return nil, err
	}
	want := clone(doc).(map[string]any)
	if err := applyDoc(want, path, v, true); err != nil {
		return nil, err
	}
	return settle(want,
		func() ([]byte, error) { return appendTable(src, path, v.(map[string]any)) },
		func() ([]byte, error) { return editText(src, []step{{path: path, value: v, upsert: true}}) })
}

// appendTable is src with a [path] table of values after it, a blank line
// between them.
func appendTable(src []byte, path []string, values map[string]any) ([]byte, error) {
	var b strings.Builder
	b.Write(src)
	if len(src) > 0 {
		if src[len(src)-1] != '\n' {
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	b.WriteString("[" + renderKey(path) + "]\n")
	for _, k := range sortedKeys(values) {
		s, err := render(values[k])
		if err != nil {
			return nil, err
		}
		b.WriteString(renderKey([]string{k}) + " = " + s + "\n")
	}
	return []byte(b.String()), nil
}
