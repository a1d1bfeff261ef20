package protocol

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// Struct tags read by this package, besides `json`:
//
//	wire:"experimental"  the field or union variant is experimental: setting it needs
//	                     capabilities.experimentalApi (see ExperimentalUse), and the
//	                     stable schema bundle leaves it out. Output fields may carry it
//	                     too; they are still always written.
//	wire:"gated"         needs capabilities.experimentalApi like experimental, but stays
//	                     in the stable schema (the reference does this for
//	                     askForApproval.granular).
//	wire:"nullvalue"     on an experimental field: null is a value of its own (the
//	                     reference's Option<Option<T>>: absent and null differ), so
//	                     null needs capabilities.experimentalApi too.
//	wire:"emptydefault"  on an experimental string field: "" is its default, as
//	                     null is (the reference reads an empty path as none).
//	wire:"optional"      makes a non-pointer field without omitempty optional.
//	wire:"required"      makes a pointer field required (present, possibly null).
//	variant:"name"       on a union's pointer field: a variant of a union tagged by "type".
//	key:"name"           on a union's field: a variant written as {"name": value}.
//	key:"*"              on a union's string field: the variants written as plain strings.
//
// Required-ness (one rule for decoding and for the schema): a field is required
// when its Go type is not a pointer and its json tag has neither omitempty nor
// omitzero, unless it is tagged wire:"optional"; a pointer field is required only
// when tagged wire:"required". Null is accepted exactly where Go has a nil: for
// pointers, slices, maps and any.

// ShapeKind classifies how a Go type appears on the wire.
type ShapeKind uint8

// Shape kinds.
const (
	KindAny     ShapeKind = iota // any JSON value (any, json.RawMessage)
	KindString                   // a string
	KindBool                     // true or false
	KindInt                      // a signed integer (Bits says the size)
	KindUint                     // an unsigned integer (Bits says the size)
	KindFloat                    // a number
	KindStruct                   // an object with known fields
	KindSlice                    // an array of Elem
	KindMap                      // an object with string keys and Elem values
	KindPointer                  // Elem, or null
	KindEnum                     // a string from Values
	KindTagged                   // an object tagged by "type", one of Variants (+ Fields common to all)
	KindKeyed                    // a plain string (Unit) or {"name": value} for one of Variants
	KindCustom                   // a type with its own JSON methods; Schema describes it
)

// Shape describes the wire form of a Go type. It is derived once per type
// from the type and its struct tags, and shared by the decoder, ExperimentalUse
// and the schema generator.
type Shape struct {
	Type     reflect.Type
	Kind     ShapeKind
	Elem     *Shape    // KindSlice, KindMap, KindPointer
	Fields   []Field   // KindStruct; KindTagged: fields common to every variant
	Variants []Variant // KindTagged, KindKeyed
	Unit     *Shape    // KindKeyed: shape of the plain-string variants (KindEnum or KindString), or nil
	unitIdx  int       // KindKeyed: index of the plain-string field
	Values   []string  // KindEnum
	Bits     int       // KindInt, KindUint: 8..64; 0 for Go int/uint
	// Schema is the JSON Schema of a KindCustom type (from its WireSchema method).
	Schema map[string]any

	byName   map[string]int // field or variant index by JSON name
	untagged int            // KindTagged: 1 + the index of the variant an object without "type" is (wire:"untagged"); 0: none
	required int            // number of required fields
	check    func(string) error
	hasExp   bool // an experimental or gated field or variant is reachable
	nonNull  bool // List or Map: never null
}

// Field is one field of a struct on the wire.
type Field struct {
	Name         string // JSON name
	Index        int    // Go field index
	Shape        *Shape
	Required     bool
	Nullable     bool // null is accepted: pointers, any, and optional slices and maps
	OmitEmpty    bool // omitted on output when empty
	Experimental bool // wire:"experimental"
	Gated        bool // wire:"gated"
	NullValue    bool // wire:"nullvalue"
	EmptyDefault bool // wire:"emptydefault"
}

// Variant is one variant of a union.
type Variant struct {
	Name         string // the "type" value or the object key
	Index        int    // Go field index in the union struct
	Shape        *Shape // the variant's value (pointer stripped)
	Experimental bool
	Gated        bool
}

// WireSchemaer is implemented by types with their own JSON encoding; the
// schema generator uses the returned JSON Schema for them.
type WireSchemaer interface {
	WireSchema() map[string]any
}

// enumer is implemented by string types with a closed set of values.
type enumer interface{ wireValues() []string }

// stringChecker is implemented by string types with extra rules (AbsPath).
type stringChecker interface{ checkWire(string) error }

// neverNuller marks List and Map, which are never written as null.
type neverNuller interface{ neverNull() }

var (
	shapeMu    sync.Mutex
	shapeCache sync.Map // reflect.Type → *Shape

	rawMessageType = reflect.TypeFor[json.RawMessage]()
	enumerType     = reflect.TypeFor[enumer]()
	checkerType    = reflect.TypeFor[stringChecker]()
	nonNullType    = reflect.TypeFor[neverNuller]()
	schemaerType   = reflect.TypeFor[WireSchemaer]()
	unmarshalType  = reflect.TypeFor[json.Unmarshaler]()
)

// ShapeOf returns the wire shape of t. It panics on a Go type that cannot be
// described (a programming error in this package's types).
func ShapeOf(t reflect.Type) *Shape {
	if s, ok := shapeCache.Load(t); ok {
		return s.(*Shape)
	}
	shapeMu.Lock()
	defer shapeMu.Unlock()
	building := map[reflect.Type]*Shape{}
	s := buildShape(t, building)
	markExperimental(building)
	for bt, b := range building {
		shapeCache.Store(bt, b)
	}
	return s
}

func buildShape(t reflect.Type, building map[reflect.Type]*Shape) *Shape {
	if s, ok := shapeCache.Load(t); ok {
		return s.(*Shape)
	}
	if s, ok := building[t]; ok {
		return s
	}
	s := &Shape{Type: t}
	building[t] = s
	switch {
	case t.Kind() == reflect.Pointer:
		s.Kind = KindPointer
		s.Elem = buildShape(t.Elem(), building)
		return s
	case t == rawMessageType || t.Kind() == reflect.Interface:
		s.Kind = KindAny
		return s
	case t.Implements(nonNullType):
		s.Kind, s.nonNull = KindSlice, true
		if t.Kind() == reflect.Map {
			s.Kind = KindMap
		}
		s.Elem = buildShape(t.Elem(), building)
		return s
	case t.Kind() == reflect.Struct && hasUnionTags(t):
		buildUnion(s, building)
		return s
	case t.Implements(enumerType):
		s.Kind = KindEnum
		s.Values = reflect.Zero(t).Interface().(enumer).wireValues()
		return s
	case t.Implements(schemaerType):
		s.Kind = KindCustom
		s.Schema = reflect.Zero(t).Interface().(WireSchemaer).WireSchema()
		if !reflect.PointerTo(t).Implements(unmarshalType) {
			panic(fmt.Sprintf("protocol: %v has WireSchema but no UnmarshalJSON", t))
		}
		return s
	}
	if reflect.PointerTo(t).Implements(unmarshalType) {
		panic(fmt.Sprintf("protocol: %v has UnmarshalJSON but no WireSchema", t))
	}
	switch t.Kind() {
	case reflect.String:
		s.Kind = KindString
		if t.Implements(checkerType) {
			s.check = reflect.Zero(t).Interface().(stringChecker).checkWire
		}
	case reflect.Bool:
		s.Kind = KindBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s.Kind, s.Bits = KindInt, intBits(t)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s.Kind, s.Bits = KindUint, intBits(t)
	case reflect.Float32, reflect.Float64:
		s.Kind = KindFloat
	case reflect.Slice:
		s.Kind = KindSlice
		s.Elem = buildShape(t.Elem(), building)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("protocol: map key of %v is not a string", t))
		}
		s.Kind = KindMap
		s.Elem = buildShape(t.Elem(), building)
	case reflect.Struct:
		s.Kind = KindStruct
		s.Fields = buildFields(t, building, nil)
		s.byName = map[string]int{}
		for i, f := range s.Fields {
			s.byName[f.Name] = i
			if f.Required {
				s.required++
			}
		}
	default:
		panic(fmt.Sprintf("protocol: unsupported wire type %v", t))
	}
	return s
}

func intBits(t reflect.Type) int {
	if t.Kind() == reflect.Int || t.Kind() == reflect.Uint {
		return 0
	}
	return t.Bits()
}

func hasUnionTags(t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("variant"); ok {
			return true
		}
		if _, ok := f.Tag.Lookup("key"); ok {
			return true
		}
	}
	return false
}

// buildFields lists the JSON fields of struct t, skipping union variant
// fields (skip reports them).
func buildFields(t reflect.Type, building map[reflect.Type]*Shape, skip func(reflect.StructField) bool) []Field {
	var out []Field
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() || (skip != nil && skip(sf)) {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			panic(fmt.Sprintf("protocol: %v.%s has no json name", t, sf.Name))
		}
		wire := tagSet(sf.Tag.Get("wire"))
		f := Field{
			Name:         name,
			Index:        i,
			Shape:        buildShape(sf.Type, building),
			OmitEmpty:    tagSet(opts)["omitempty"] || tagSet(opts)["omitzero"],
			Experimental: wire["experimental"],
			Gated:        wire["gated"],
			NullValue:    wire["nullvalue"],
			EmptyDefault: wire["emptydefault"],
		}
		isPtr := sf.Type.Kind() == reflect.Pointer
		f.Required = (!isPtr && !f.OmitEmpty && !wire["optional"]) || (isPtr && wire["required"])
		f.Nullable = isPtr || sf.Type.Kind() == reflect.Interface || sf.Type == rawMessageType ||
			(!f.Required && !sf.Type.Implements(nonNullType) &&
				(sf.Type.Kind() == reflect.Slice || sf.Type.Kind() == reflect.Map))
		out = append(out, f)
	}
	return out
}

func tagSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			m[p] = true
		}
	}
	return m
}

func buildUnion(s *Shape, building map[reflect.Type]*Shape) {
	t := s.Type
	s.byName = map[string]int{}
	s.unitIdx = -1
	isVariant := func(sf reflect.StructField) bool {
		_, v := sf.Tag.Lookup("variant")
		_, k := sf.Tag.Lookup("key")
		return v || k
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, tagged := sf.Tag.Lookup("variant")
		if !tagged {
			var ok bool
			if name, ok = sf.Tag.Lookup("key"); !ok {
				continue
			}
		}
		kind := KindKeyed
		if tagged {
			kind = KindTagged
		}
		if s.Kind != KindAny && s.Kind != kind {
			panic(fmt.Sprintf("protocol: %v mixes variant and key tags", t))
		}
		s.Kind = kind
		if name == "*" {
			if sf.Type.Kind() != reflect.String {
				panic(fmt.Sprintf("protocol: %v.%s: key:\"*\" needs a string type", t, sf.Name))
			}
			s.Unit, s.unitIdx = buildShape(sf.Type, building), i
			continue
		}
		if sf.Type.Kind() != reflect.Pointer {
			panic(fmt.Sprintf("protocol: union variant %v.%s is not a pointer", t, sf.Name))
		}
		wire := tagSet(sf.Tag.Get("wire"))
		v := Variant{Name: name, Index: i, Shape: buildShape(sf.Type.Elem(), building),
			Experimental: wire["experimental"], Gated: wire["gated"]}
		if tagged && v.Shape.Kind != KindStruct {
			panic(fmt.Sprintf("protocol: tagged variant %v.%s is not a struct", t, sf.Name))
		}
		s.byName[name] = len(s.Variants)
		if wire["untagged"] {
			if !tagged || s.untagged != 0 {
				panic(fmt.Sprintf("protocol: %v.%s: untagged needs a tagged union with no other untagged variant", t, sf.Name))
			}
			s.untagged = len(s.Variants) + 1
		}
		s.Variants = append(s.Variants, v)
	}
	if s.Kind == KindTagged {
		s.Fields = buildFields(t, building, isVariant)
	} else if len(buildFields(t, building, isVariant)) > 0 {
		panic(fmt.Sprintf("protocol: keyed union %v has common fields", t))
	}
}

// markExperimental sets hasExp on the new shapes, iterating to a fixpoint
// because types may refer to each other.
func markExperimental(building map[reflect.Type]*Shape) {
	for changed := true; changed; {
		changed = false
		for _, s := range building {
			if !s.hasExp && s.directExp() {
				s.hasExp, changed = true, true
			}
		}
	}
}

func (s *Shape) directExp() bool {
	if s.Elem != nil && s.Elem.hasExp {
		return true
	}
	for _, f := range s.Fields {
		if f.Experimental || f.Gated || f.Shape.hasExp {
			return true
		}
	}
	for _, v := range s.Variants {
		if v.Experimental || v.Gated || v.Shape.hasExp {
			return true
		}
	}
	return false
}

// field returns the field with the JSON name.
func (s *Shape) field(name []byte) (*Field, int, bool) {
	i, ok := s.byName[string(name)]
	if !ok {
		return nil, 0, false
	}
	return &s.Fields[i], i, true
}

// expected names the shape the way serde's "expected …" texts do.
func (s *Shape) expected() string {
	switch s.Kind {
	case KindString:
		return "a string"
	case KindBool:
		return "a boolean"
	case KindInt:
		if s.Bits == 0 {
			return "isize"
		}
		return fmt.Sprintf("i%d", s.Bits)
	case KindUint:
		if s.Bits == 0 {
			return "usize"
		}
		return fmt.Sprintf("u%d", s.Bits)
	case KindFloat:
		return "f64"
	case KindSlice:
		return "a sequence"
	case KindMap:
		return "a map"
	case KindStruct:
		return "struct " + s.Type.Name()
	case KindTagged:
		return "internally tagged enum " + s.Type.Name()
	case KindEnum, KindKeyed:
		return "string or map"
	case KindPointer:
		return s.Elem.expected()
	}
	return "any value"
}
