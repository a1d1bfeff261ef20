package protocol

import (
	"bytes"
	"encoding/json"
	jsonv2 "encoding/json/v2"
	"fmt"
	"reflect"
	"sync"
)

// Unions are Go structs with one pointer field per variant, exactly one of
// which is set (see the variant and key tags in shape.go). Adding a variant
// is adding a field. Union types forward their JSON methods to marshalUnion
// and unmarshalUnion.

// marshalUnion encodes the union that u points to.
func marshalUnion(u any) ([]byte, error) {
	v := reflect.ValueOf(u).Elem()
	s := ShapeOf(v.Type())
	var chosen *Variant
	for i := range s.Variants {
		if !v.Field(s.Variants[i].Index).IsNil() {
			if chosen != nil {
				return nil, fmt.Errorf("protocol: %s has both %s and %s set", v.Type().Name(), chosen.Name, s.Variants[i].Name)
			}
			chosen = &s.Variants[i]
		}
	}
	if s.Kind == KindKeyed && s.unitIdx >= 0 && v.Field(s.unitIdx).String() != "" {
		if chosen != nil {
			return nil, fmt.Errorf("protocol: %s has both a string and %s set", v.Type().Name(), chosen.Name)
		}
		return jsonMarshal(v.Field(s.unitIdx).String())
	}
	if chosen == nil {
		return nil, fmt.Errorf("protocol: %s has no variant set", v.Type().Name())
	}
	body, err := jsonMarshal(v.Field(chosen.Index).Interface())
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(body) + len(chosen.Name) + 16)
	if s.Kind == KindKeyed {
		buf.WriteString(`{"`)
		buf.WriteString(chosen.Name)
		buf.WriteString(`":`)
		buf.Write(body)
		buf.WriteByte('}')
		return buf.Bytes(), nil
	}
	buf.WriteString(`{"type":"`)
	buf.WriteString(chosen.Name)
	buf.WriteByte('"')
	if len(body) > 2 {
		buf.WriteByte(',')
		buf.Write(body[1 : len(body)-1])
	}
	for _, f := range s.Fields {
		fv := v.Field(f.Index)
		if f.OmitEmpty && fv.IsZero() {
			continue
		}
		b, err := jsonMarshal(fv.Interface())
		if err != nil {
			return nil, err
		}
		buf.WriteString(`,"`)
		buf.WriteString(f.Name)
		buf.WriteString(`":`)
		buf.Write(b)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// commonTypes caches, per tagged union, a struct type holding the "type" tag
// and the union's common fields, so one decode reads both.
var commonTypes sync.Map // reflect.Type → reflect.Type

func commonType(t reflect.Type, s *Shape) reflect.Type {
	if c, ok := commonTypes.Load(t); ok {
		return c.(reflect.Type)
	}
	fields := []reflect.StructField{{Name: "Type__", Type: reflect.TypeFor[*string](), Tag: `json:"type"`}}
	for _, f := range s.Fields {
		sf := t.Field(f.Index)
		fields = append(fields, reflect.StructField{Name: sf.Name, Type: sf.Type, Tag: sf.Tag})
	}
	c := reflect.StructOf(fields)
	commonTypes.Store(t, c)
	return c
}

// unmarshalUnion decodes data into the union that u points to. Input that
// went through Unmarshal has been checked already; the errors here serve
// direct users of encoding/json.
func unmarshalUnion(data []byte, u any) error {
	v := reflect.ValueOf(u).Elem()
	s := ShapeOf(v.Type())
	v.SetZero()
	data = bytes.TrimSpace(data)
	if s.Kind == KindKeyed {
		return unmarshalKeyed(data, v, s)
	}
	ct := commonType(v.Type(), s)
	head := reflect.New(ct)
	if err := jsonv2.Unmarshal(data, head.Interface()); err != nil {
		return err
	}
	tag := head.Elem().Field(0).Interface().(*string)
	var vr Variant
	switch {
	case tag != nil:
		i, ok := s.byName[*tag]
		if !ok {
			return unknownVariant(*tag, variantNames(s))
		}
		vr = s.Variants[i]
	case s.untagged != 0:
		vr = s.Variants[s.untagged-1]
	default:
		return &decodeError{"missing field `type`"}
	}
	p := reflect.New(vr.Shape.Type)
	if err := jsonv2.Unmarshal(data, p.Interface()); err != nil {
		return err
	}
	v.Field(vr.Index).Set(p)
	for j, f := range s.Fields {
		v.Field(f.Index).Set(head.Elem().Field(j + 1))
	}
	return nil
}

func unmarshalKeyed(data []byte, v reflect.Value, s *Shape) error {
	if len(data) > 0 && data[0] == '"' {
		var str string
		if err := jsonv2.Unmarshal(data, &str); err != nil {
			return err
		}
		if s.Unit == nil || (s.Unit.Kind == KindEnum && !contains(s.Unit.Values, str)) {
			return unknownVariant(str, variantNames(s))
		}
		v.Field(s.unitIdx).SetString(str)
		return nil
	}
	var m map[string]json.RawMessage
	if err := jsonv2.Unmarshal(data, &m); err != nil {
		return err
	}
	if len(m) != 1 {
		return &decodeError{"invalid value: map, expected map with a single key"}
	}
	for k, raw := range m {
		i, ok := s.byName[k]
		if !ok {
			return unknownVariant(k, variantNames(s))
		}
		vr := s.Variants[i]
		p := reflect.New(vr.Shape.Type)
		if err := jsonv2.Unmarshal(raw, p.Interface()); err != nil {
			return err
		}
		v.Field(vr.Index).Set(p)
	}
	return nil
}

// variantNames lists a union's variant names the way serde does: plain-string
// variants first, then the others, in declaration order.
func variantNames(s *Shape) []string {
	var names []string
	if s.Unit != nil {
		names = append(names, s.Unit.Values...)
	}
	for _, v := range s.Variants {
		names = append(names, v.Name)
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
