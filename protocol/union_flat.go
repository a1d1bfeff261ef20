package protocol

import (
	"encoding/json/jsontext"
	jsonv2 "encoding/json/v2"
	"reflect"
	"sync"
)

// marshalUnionTo writes the tagged union that u points to into enc, with
// enc's options, as marshalUnion does but without encoding the variant
// apart and copying it: through a struct type made once per variant (the
// "type" tag, the variant embedded, whose fields encoding/json promotes,
// and the union's common fields), so a long list of items (a thread's
// turns) is encoded in one pass. A keyed union, and a variant whose type
// encodes itself, take marshalUnion's way. Like List's MarshalJSONTo, it
// takes the options of the encoder it writes into: encode protocol values
// with encoding/json (v1), as the server does; encoding/json/v2's Marshal
// would apply v2's rules to the variant's fields (invalid UTF-8 refused).
func marshalUnionTo(enc *jsontext.Encoder, u any) error {
	v := reflect.ValueOf(u).Elem()
	s := ShapeOf(v.Type())
	if s.Kind == KindTagged {
		set := -1
		for i := range s.Variants {
			if !v.Field(s.Variants[i].Index).IsNil() {
				if set >= 0 {
					set = -1 // marshalUnion says what is wrong
					break
				}
				set = i
			}
		}
		if set >= 0 {
			if ft := flatType(v.Type(), s, set); ft != nil {
				o := reflect.New(ft).Elem()
				o.Field(0).SetString(s.Variants[set].Name)
				o.Field(1).Set(v.Field(s.Variants[set].Index))
				for j, f := range s.Fields {
					o.Field(j + 2).Set(v.Field(f.Index))
				}
				return jsonv2.MarshalEncode(enc, o.Addr().Interface())
			}
		}
	}
	b, err := marshalUnion(u)
	if err != nil {
		return err
	}
	return enc.WriteValue(b)
}

// flatTypes caches flatType's answers by union type and variant.
var flatTypes sync.Map // flatKey → reflect.Type (nil: none)

type flatKey struct {
	union   reflect.Type
	variant int
}

// flatType is the struct type that encodes variant i of the tagged union
// type t flat, or nil when there can be none: the variant's type has
// methods (JSON methods of its own, which an embedded field would not
// call; or any, which reflect.StructOf cannot embed after another field).
func flatType(t reflect.Type, s *Shape, i int) reflect.Type {
	k := flatKey{t, i}
	if ft, ok := flatTypes.Load(k); ok {
		ft, _ := ft.(reflect.Type)
		return ft
	}
	vt := t.Field(s.Variants[i].Index).Type // a pointer to a struct
	var ft reflect.Type
	if vt.NumMethod() == 0 { // a pointer's methods include its element's
		fields := []reflect.StructField{
			{Name: "Type__", Type: reflect.TypeFor[string](), Tag: `json:"type"`},
			{Name: vt.Elem().Name(), Type: vt, Anonymous: true},
		}
		for _, f := range s.Fields {
			sf := t.Field(f.Index)
			fields = append(fields, reflect.StructField{Name: sf.Name, Type: sf.Type, Tag: sf.Tag})
		}
		ft = structOf(fields)
	}
	flatTypes.Store(k, ft)
	return ft
}

// structOf is reflect.StructOf, nil where it would panic: a type it
// cannot make encodes the slower way rather than stopping the daemon.
func structOf(fields []reflect.StructField) (t reflect.Type) {
	defer func() {
		if recover() != nil {
			t = nil
		}
	}()
	return reflect.StructOf(fields)
}
