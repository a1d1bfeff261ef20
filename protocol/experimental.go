package protocol

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ExperimentalUse returns the descriptor of the first experimental field or
// union variant set in raw params of m, in document order, or "" when none
// is. A field that holds its default does not count, as in the reference:
// null (unless the field is tagged wire:"nullvalue"), false for a boolean
// that cannot be null (a nullable one's false is a choice, as the
// reference's Option<bool> is Some(false)), and "" for a field tagged
// wire:"emptydefault". Everything else counts, empty arrays and objects
// included (the reference's Some(vec![])). Descriptors:
//
//	"<method>.<field>"           a top-level field: "thread/start.experimentalRawEvents"
//	"<method>.<field>.<field>"   a nested field: "thread/items/list.deferOutput.mcpToolCall"
//	"<unionType>.<variant>"      a union variant: "askForApproval.granular"
//
// Experimental fields and variants are the ones tagged wire:"experimental" or
// wire:"gated". Malformed raw yields "" (DecodeParams reports it).
func ExperimentalUse(m *MethodInfo, raw json.RawMessage) string {
	if m == nil || m.Params == nil {
		return ""
	}
	s := ShapeOf(m.Params)
	if !s.hasExp || !json.Valid(raw) {
		return ""
	}
	d := scanner{data: raw}
	use, _ := d.expUse(s, m.Method)
	return use
}

// expUse walks one value along s and returns the first experimental use.
func (d *scanner) expUse(s *Shape, path string) (string, error) {
	c := d.peek()
	if !s.hasExp || c == 'n' {
		return "", d.skip()
	}
	switch s.Kind {
	case KindPointer:
		return d.expUse(s.Elem, path)
	case KindSlice, KindMap:
		open, close := byte('['), byte(']')
		if s.Kind == KindMap {
			open, close = '{', '}'
		}
		if c != open {
			return "", d.skip()
		}
		d.pos++
		if d.peek() == close {
			d.pos++
			return "", nil
		}
		for {
			if s.Kind == KindMap {
				if _, err := d.key(); err != nil {
					return "", err
				}
			}
			if use, err := d.expUse(s.Elem, path); use != "" || err != nil {
				return use, err
			}
			if d.peek() != ',' {
				return "", d.expect(close)
			}
			d.pos++
		}
	case KindStruct:
		if c != '{' {
			return "", d.skip()
		}
		return d.expObject(s, nil, "", path)
	case KindTagged:
		if c != '{' {
			return "", d.skip()
		}
		v, err := d.variant(s)
		if err != nil {
			return "", err
		}
		if v.Experimental || v.Gated {
			return lowerFirst(s.Type.Name()) + "." + v.Name, nil
		}
		return d.expObject(v.Shape, s, "type", path)
	case KindKeyed:
		if c != '{' {
			return "", d.skip()
		}
		d.pos++
		if d.peek() == '}' {
			d.pos++
			return "", nil
		}
		k, err := d.key()
		if err != nil {
			return "", err
		}
		i, ok := s.byName[string(k)]
		if !ok {
			return "", nil
		}
		v := &s.Variants[i]
		if (v.Experimental || v.Gated) && d.peek() != 'n' {
			return lowerFirst(s.Type.Name()) + "." + v.Name, nil
		}
		return d.expUse(v.Shape, path)
	}
	return "", d.skip()
}

func (d *scanner) expObject(s, common *Shape, skipKey, path string) (string, error) {
	d.pos++
	if d.peek() == '}' {
		d.pos++
		return "", nil
	}
	for {
		k, err := d.key()
		if err != nil {
			return "", err
		}
		f, _, ok := s.field(k)
		if !ok && common != nil {
			f, _, ok = common.field(k)
		}
		switch {
		case !ok || string(k) == skipKey:
			err = d.skip()
		case (f.Experimental || f.Gated) && !d.atDefault(f):
			return path + "." + f.Name, nil
		default:
			var use string
			if use, err = d.expUse(f.Shape, path+"."+f.Name); use != "" {
				return use, nil
			}
		}
		if err != nil {
			return "", err
		}
		if d.peek() != ',' {
			return "", d.expect('}')
		}
		d.pos++
	}
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + strings.Clone(s[n:])
}

// atDefault reports whether the value ahead is field f's default (see
// ExperimentalUse). It does not move.
func (d *scanner) atDefault(f *Field) bool {
	switch d.peek() {
	case 'n':
		return !f.NullValue
	case 'f':
		return f.Shape.Kind == KindBool
	case '"':
		return f.EmptyDefault && d.pos+1 < len(d.data) && d.data[d.pos+1] == '"'
	}
	return false
}
