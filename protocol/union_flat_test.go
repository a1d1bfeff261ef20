package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// fill sets every field of v, recursively, to a value that is not its
// zero (strings with characters that HTML escaping would change); a
// union gets its variant number pick, its nested unions their first.
func fill(v reflect.Value, pick, depth int) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), 0, depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			return
		}
		if s := ShapeOf(v.Type()); s.Kind == KindTagged || s.Kind == KindKeyed {
			if len(s.Variants) == 0 {
				return
			}
			vr := s.Variants[pick%len(s.Variants)]
			fill(v.Field(vr.Index), 0, depth+1)
			for _, f := range s.Fields {
				fill(v.Field(f.Index), 0, depth+1)
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), 0, depth+1)
			}
		}
	case reflect.String:
		v.SetString("a<b>&\"c\" é")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), 0, depth+1)
		v.Set(s)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, 0, depth+1)
		m.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), e)
		v.Set(m)
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	}
}

// Encoding a union through its parent's encoder (marshalUnionTo) writes
// the same bytes as marshalUnion, for every variant of ThreadItem and
// UserInput, filled and empty, with and without HTML escaping.
func TestUnionEncodesFlatAsApart(t *testing.T) {
	for _, u := range []any{&ThreadItem{}, &UserInput{}} {
		typ := reflect.TypeOf(u).Elem()
		s := ShapeOf(typ)
		for i := range s.Variants {
			if flatType(typ, s, i) == nil {
				t.Errorf("%s %s is not encoded flat", typ.Name(), s.Variants[i].Name)
			}
			for _, filled := range []bool{true, false} {
				p := reflect.New(typ)
				if filled {
					fill(p.Elem(), i, 0)
				} else {
					p.Elem().Field(s.Variants[i].Index).Set(reflect.New(typ.Field(s.Variants[i].Index).Type.Elem()))
				}
				apart, err := marshalUnion(p.Interface())
				if err != nil {
					t.Fatalf("%s %s: %v", typ.Name(), s.Variants[i].Name, err)
				}
				for _, escape := range []bool{false, true} {
					var got, want bytes.Buffer
					e := json.NewEncoder(&got)
					e.SetEscapeHTML(escape)
					if err := e.Encode([]any{p.Elem().Interface()}); err != nil {
						t.Fatalf("%s %s: %v", typ.Name(), s.Variants[i].Name, err)
					}
					e = json.NewEncoder(&want)
					e.SetEscapeHTML(escape)
					if err := e.Encode([]json.RawMessage{apart}); err != nil {
						t.Fatal(err)
					}
					if got.String() != want.String() {
						t.Fatalf("%s %s (filled %v, escape %v):\nflat  %s\napart %s", typ.Name(), s.Variants[i].Name, filled, escape, got.Bytes(), want.Bytes())
					}
				}
			}
		}
	}
	// The server's encoder takes the flat way: a fraction of the
	// allocations of encoding apart.
	item := []ThreadItem{{AgentMessage: &AgentMessageItem{ID: "m", Text: "t"}}}
	encode := func(v any) {
		e := json.NewEncoder(&bytes.Buffer{})
		e.SetEscapeHTML(false)
		if err := e.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	flat := testing.AllocsPerRun(20, func() { encode(item) })
	apart := testing.AllocsPerRun(20, func() { encode([]apartItem{{item[0]}}) })
	if flat >= apart/2 {
		t.Fatalf("%v allocations flat, %v apart: the flat way is not taken", flat, apart)
	}
	// A variant type with a method cannot be embedded by reflect.StructOf:
	// no flat type, no panic.
	if structOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[string]()},
		{Name: "Buffer", Type: reflect.TypeFor[*bytes.Buffer](), Anonymous: true},
	}) != nil {
		t.Fatal("a struct type embedding a type with methods after a field")
	}
	// Two variants set: the same error as marshalUnion's.
	two := ThreadItem{AgentMessage: &AgentMessageItem{}, Plan: &PlanItem{}}
	if _, err := json.Marshal(two); err == nil {
		t.Fatal("a union with two variants was encoded")
	}
}

// apartItem encodes a ThreadItem the way it was before marshalUnionTo:
// apart, then copied and checked by its parent.
type apartItem struct{ it ThreadItem }

func (a apartItem) MarshalJSON() ([]byte, error) { return marshalUnion(&a.it) }

// BenchmarkEncodeItems encodes 3,000 items (a message, a command and
// reasoning, a thousand times) as the server's encoder does: flat, and
// apart for comparison.
func BenchmarkEncodeItems(b *testing.B) {
	ms := int64(1700000000000)
	var items []ThreadItem
	for range 1000 {
		items = append(items,
			ThreadItem{AgentMessage: &AgentMessageItem{ID: "msg_1", Text: "I fixed the off-by-one error in the loop bound."}, StartedAtMs: &ms, CompletedAtMs: &ms},
			ThreadItem{CommandExecution: &CommandExecutionItem{ID: "call_1", Command: "go test ./...", Cwd: "/work/project", Status: "completed"}},
			ThreadItem{Reasoning: &ReasoningItem{ID: "rs_1", Summary: []string{"Looking at the file to find the bug."}}})
	}
	apart := make([]apartItem, len(items))
	for i := range items {
		apart[i] = apartItem{items[i]}
	}
	for _, bc := range []struct {
		name string
		v    any
	}{{"flat", items}, {"apart", apart}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				e := json.NewEncoder(&buf)
				e.SetEscapeHTML(false)
				if err := e.Encode(bc.v); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}
