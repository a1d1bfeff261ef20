package configedit

import (
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// textIndex locates a document's keys and tables in its text.
type textIndex struct {
	src []byte
	// kvs are the key/value lines by joined path (outside arrays of
	// tables).
	kvs map[string]*kvSpan
	// tables are the paths that are tables: headers, the tables dotted
	// keys and headers imply, inline tables.
	tables map[string]bool
	// arrays are the paths of arrays of tables.
	arrays   [][]string
	sections []*section
}

// kvSpan is where a key/value expression and its value are.
type kvSpan struct {
	valStart, valEnd   int
	lineStart, lineEnd int
	inline             bool
}

// section is the root table or a [table] and where a new key goes in it.
type section struct {
	path     []string
	array    bool
	hasKV    bool
	insertAt int
	// headerStart is where its header line starts (-1 for the root).
	headerStart int
}

func joinPath(p []string) string { return strings.Join(p, "\x00") }

// buildIndex parses src and records where everything is.
func buildIndex(src []byte) (*textIndex, error) {
	ix := &textIndex{src: src, kvs: map[string]*kvSpan{}, tables: map[string]bool{}}
	root := &section{headerStart: -1, insertAt: -1}
	ix.sections = []*section{root}
	cur := root
	var p unstable.Parser
	p.Reset(src)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, first, last := keyParts(e.Key())
			s := &section{path: parts, array: e.Kind == unstable.ArrayTable || ix.underArray(parts),
				headerStart: lineStart(src, first), insertAt: lineEnd(src, last)}
			if e.Kind == unstable.ArrayTable {
				ix.arrays = append(ix.arrays, parts)
			}
			for i := 1; i <= len(parts); i++ {
				ix.tables[joinPath(parts[:i])] = true
			}
			ix.sections = append(ix.sections, s)
			cur = s
		case unstable.KeyValue:
			parts, _, last := keyParts(e.Key())
			full := append(slices.Clone(cur.path), parts...)
			start := int(e.Raw.Offset)
			end := start + int(e.Raw.Length)
			kv := &kvSpan{valStart: afterEquals(src, last), valEnd: end,
				lineStart: lineStart(src, start), lineEnd: lineEnd(src, end), inline: e.Value().Kind == unstable.InlineTable}
			for i := len(cur.path) + 1; i < len(full); i++ {
				ix.tables[joinPath(full[:i])] = true
			}
			if kv.inline {
				ix.tables[joinPath(full)] = true
			}
			if !cur.array {
				ix.kvs[joinPath(full)] = kv
			}
			cur.hasKV = true
			cur.insertAt = kv.lineEnd
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	if root.insertAt < 0 {
		root.insertAt = len(src)
		if len(ix.sections) > 1 {
			root.insertAt = ix.sections[1].headerStart
		}
	}
	return ix, nil
}

// keyParts returns a key's parts, where it starts and where it ends.
func keyParts(it unstable.Iterator) (parts []string, start, end int) {
	start = -1
	for it.Next() {
		n := it.Node()
		parts = append(parts, string(n.Data))
		if start < 0 {
			start = int(n.Raw.Offset)
		}
		end = int(n.Raw.Offset + n.Raw.Length)
	}
	return parts, start, end
}

// underArray reports whether path is inside an array of tables.
func (ix *textIndex) underArray(path []string) bool {
	for _, a := range ix.arrays {
		if len(path) >= len(a) && slices.Equal(path[:len(a)], a) {
			return true
		}
	}
	return false
}

// prefixIsValue reports whether a proper prefix of path is a key/value
// (for example an inline table), which edits cannot reach into.
func (ix *textIndex) prefixIsValue(path []string) bool {
	for i := 1; i < len(path); i++ {
		if ix.kvs[joinPath(path[:i])] != nil {
			return true
		}
	}
	return false
}

func lineStart(src []byte, off int) int {
	for off > 0 && src[off-1] != '\n' {
		off--
	}
	return off
}

func lineEnd(src []byte, off int) int {
	for off < len(src) && src[off] != '\n' {
		off++
	}
	if off < len(src) {
		off++
	}
	return off
}

// afterEquals returns where the value starts after a key ending at off.
func afterEquals(src []byte, off int) int {
	for off < len(src) && (src[off] == ' ' || src[off] == '\t') {
		off++
	}
	if off < len(src) && src[off] == '=' {
		off++
	}
	for off < len(src) && (src[off] == ' ' || src[off] == '\t') {
		off++
	}
	return off
}

func splice(src []byte, from, to int, s string) []byte {
	out := make([]byte, 0, len(src)-(to-from)+len(s))
	out = append(out, src[:from]...)
	out = append(out, s...)
	return append(out, src[to:]...)
}

// applyStep applies one edit to the text.
func applyStep(src []byte, path []string, v any, upsert bool) ([]byte, error) {
	ix, err := buildIndex(src)
	if err != nil {
		return nil, err
	}
	if ix.underArray(path) || ix.prefixIsValue(path) {
		return nil, errRewrite
	}
	key := joinPath(path)
	if v == nil {
		if kv := ix.kvs[key]; kv != nil {
			return splice(src, kv.lineStart, kv.lineEnd, ""), nil
		}
		if ix.tables[key] {
			return nil, errRewrite
		}
		return src, nil // nothing there
	}
	m, isMap := v.(map[string]any)
	if kv := ix.kvs[key]; kv != nil {
		if isMap && upsert && kv.inline {
			doc, err := Parse(src)
			if err != nil {
				return nil, err
			}
			merged := clone(lookup(doc, path)).(map[string]any)
			mergeInto(merged, m)
			v = merged
		}
		text, err := render(withoutNulls(v))
		if err != nil {
			return nil, err
		}
		return splice(src, kv.valStart, kv.valEnd, text), nil
	}
	if ix.tables[key] {
		if !isMap || !upsert {
			return nil, errRewrite // a table replaced as a whole
		}
		for _, k := range sortedKeys(m) {
			if src, err = applyStep(src, append(slices.Clone(path), k), m[k], true); err != nil {
				return nil, err
			}
		}
		return src, nil
	}
	if isMap {
		nv := withoutNulls(m).(map[string]any)
		if len(nv) > 0 {
			// A new table: its members as dotted keys.
			for _, k := range sortedKeys(nv) {
				if src, err = applyStep(src, append(slices.Clone(path), k), nv[k], false); err != nil {
					return nil, err
				}
			}
			return src, nil
		}
	}
	return ix.insert(path, withoutNulls(v))
}

// insert adds "key = value" at the end of the deepest table that contains
// path, naming the rest of the path as a dotted key.
func (ix *textIndex) insert(path []string, v any) ([]byte, error) {
	best := ix.sections[0]
	for _, s := range ix.sections[1:] {
		if !s.array && len(s.path) < len(path) && slices.Equal(path[:len(s.path)], s.path) && len(s.path) >= len(best.path) {
			best = s
		}
	}
	text, err := render(v)
	if err != nil {
		return nil, err
	}
	line := renderKey(path[len(best.path):]) + " = " + text + "\n"
	at := best.insertAt
	if at > 0 && ix.src[at-1] != '\n' {
		line = "\n" + line
	}
	if best == ix.sections[0] && !best.hasKV && len(ix.sections) > 1 {
		line += "\n" // a blank line before the first table
	}
	return splice(ix.src, at, at, line), nil
}

// lookup returns the value at path in doc (nil when absent).
func lookup(doc map[string]any, path []string) any {
	var cur any = doc
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
