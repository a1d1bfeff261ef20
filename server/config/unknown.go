package config

import (
	"reflect"
	"sort"
	"strings"
)

// unknownKeys lists the dotted keys of doc that the type t (a struct with
// toml tags) does not know, sorted.
func unknownKeys(doc map[string]any, t reflect.Type) []string {
	var out []string
	walkKeys(doc, t, "", &out)
	sort.Strings(out)
	return out
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
