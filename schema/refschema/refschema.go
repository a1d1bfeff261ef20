// Package refschema validates wire messages against the reference server's
// JSON Schema (read by path, never copied into this repository). It is for
// tests: each method's branch of the schema is compiled on its own, which
// makes validation fast (microseconds a message) and its errors precise.
package refschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// DefaultDir is where the reference schema bundles live; the environment
// variable AGENTD_REFERENCE_SCHEMA overrides it.
const DefaultDir = "/work/shared/reference/schema"

// Bundle is the bundle validated against: the experimental one, a superset
// of the stable one (output fields marked experimental are sent to every
// client).
const Bundle = "experimental.schemas.json"

// ErrNotInSchema is returned for a method the reference schema does not have.
var ErrNotInSchema = errors.New("method not in the reference schema")

// V validates messages. It is safe for concurrent use.
type V struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	url      string
	// branch[kind][method] is the oneOf index of the method's branch.
	branch map[string]map[string]int
	// params[kind][method] is the $ref of the method's params, if any.
	params   map[string]map[string]string
	defs     map[string]any // the bundle's "definitions"
	compiled map[string]*jsonschema.Schema
}

var (
	loadOnce sync.Once
	loaded   *V
	loadErr  error
)

// Validator returns the shared validator, skipping the test when the
// reference schema is not there and failing it when it cannot be loaded.
func Validator(t testing.TB) *V {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = Load(Dir()) })
	if errors.Is(loadErr, os.ErrNotExist) {
		t.Skipf("reference schema not found in %s (set AGENTD_REFERENCE_SCHEMA): %v", Dir(), loadErr)
	}
	if loadErr != nil {
		t.Fatalf("loading reference schema: %v", loadErr)
	}
	return loaded
}

// Dir returns the directory of the reference schema bundles.
func Dir() string {
	if d := os.Getenv("AGENTD_REFERENCE_SCHEMA"); d != "" {
		return d
	}
	return DefaultDir
}

// Load reads the experimental bundle from dir.
func Load(dir string) (*V, error) { return LoadBundle(dir, Bundle) }

// LoadBundle reads the named bundle ("stable.schemas.json", …) from dir. It
// also reads agentd's own bundles, which have the same layout.
func LoadBundle(dir, bundle string) (*V, error) {
	path := filepath.Join(dir, bundle)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	v := &V{
		compiler: jsonschema.NewCompiler(),
		url:      "file://" + filepath.ToSlash(path),
		branch:   map[string]map[string]int{},
		params:   map[string]map[string]string{},
		compiled: map[string]*jsonschema.Schema{},
	}
	if err := v.compiler.AddResource(v.url, doc); err != nil {
		return nil, err
	}
	root, _ := doc.(map[string]any)
	v.defs, _ = root["definitions"].(map[string]any)
	for _, kind := range []string{"ClientRequest", "ClientNotification", "ServerRequest", "ServerNotification"} {
		def, _ := v.defs[kind].(map[string]any)
		branches, _ := def["oneOf"].([]any)
		if len(branches) == 0 {
			return nil, fmt.Errorf("%s: no %s branches", path, kind)
		}
		v.branch[kind], v.params[kind] = map[string]int{}, map[string]string{}
		for i, b := range branches {
			props, _ := b.(map[string]any)["properties"].(map[string]any)
			meth, _ := props["method"].(map[string]any)
			enum, _ := meth["enum"].([]any)
			if len(enum) != 1 {
				continue
			}
			name, _ := enum[0].(string)
			v.branch[kind][name] = i
			if p, ok := props["params"].(map[string]any); ok {
				v.params[kind][name] = paramsRef(p)
			}
		}
	}
	return v, nil
}

// paramsRef returns the "$ref" of a params schema, also when the params
// may be null (anyOf [{"$ref": …}, {"type": "null"}]).
func paramsRef(p map[string]any) string {
	if ref, ok := p["$ref"].(string); ok {
		return ref
	}
	alts, _ := p["anyOf"].([]any)
	for _, a := range alts {
		if m, ok := a.(map[string]any); ok {
			if ref, ok := m["$ref"].(string); ok {
				return ref
			}
		}
	}
	return ""
}

// Methods returns the methods of a kind ("ClientRequest", "ServerNotification", …)
// in the reference schema, in the bundle's order.
func (v *V) Methods(kind string) []string {
	var out []string
	for m := range v.branch[kind] {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return v.branch[kind][out[i]] < v.branch[kind][out[j]] })
	return out
}

// Has reports whether the reference schema has the method of the kind.
func (v *V) Has(kind, method string) bool {
	_, ok := v.branch[kind][method]
	return ok
}

// ParamsRef returns the "$ref" of a method's params in the reference bundle
// ("#/definitions/v2/ThreadStartParams"), or "" when the method has none.
func (v *V) ParamsRef(kind, method string) string { return v.params[kind][method] }

// ResultRef returns the "$ref" of the result of a request method (kind
// "ClientRequest" or "ServerRequest"), or "" when the bundle has none.
func (v *V) ResultRef(kind, method string) string {
	if r, ok := resultOverrides[method]; ok && kind == "ClientRequest" {
		return r
	}
	p := v.params[kind][method]
	if !strings.HasSuffix(p, "Params") {
		return ""
	}
	r := strings.TrimSuffix(p, "Params") + "Response"
	if v.Definition(r) == nil {
		return ""
	}
	return r
}

// resultOverrides names results that do not follow the Params → Response rule.
var resultOverrides = map[string]string{
	"config/value/write":      "#/definitions/v2/ConfigWriteResponse",
	"config/batchWrite":       "#/definitions/v2/ConfigWriteResponse",
	"configRequirements/read": "#/definitions/v2/ConfigRequirementsReadResponse",
	"account/logout":          "#/definitions/v2/LogoutAccountResponse",
	"config/mcpServer/reload": "#/definitions/v2/McpServerRefreshResponse",
}

// Definition returns the raw schema at a "#/definitions/…" reference, or nil.
func (v *V) Definition(ref string) map[string]any {
	var cur any = map[string]any{"definitions": v.defs}
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[tok]
	}
	m, _ := cur.(map[string]any)
	return m
}

func (v *V) schema(ptr string) (*jsonschema.Schema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.compiled[ptr]; ok {
		return s, nil
	}
	s, err := v.compiler.Compile(v.url + ptr)
	if err != nil {
		return nil, err
	}
	v.compiled[ptr] = s
	return s, nil
}

func (v *V) validateBranch(kind, method string, inst any) error {
	i, ok := v.branch[kind][method]
	if !ok {
		return fmt.Errorf("%w: %s %s", ErrNotInSchema, kind, method)
	}
	s, err := v.schema(fmt.Sprintf("#/definitions/%s/oneOf/%d", kind, i))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

func parse(msg []byte) (any, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(msg))
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	return inst, nil
}

// ValidateServerMessage validates a notification or request sent by the
// server (responses need their method: see ValidateResponse).
// Notifications must also carry an integer emittedAtMs.
func (v *V) ValidateServerMessage(msg []byte) error {
	inst, err := parse(msg)
	if err != nil {
		return err
	}
	obj, _ := inst.(map[string]any)
	method, _ := obj["method"].(string)
	switch {
	case method == "":
		return errors.New("not a notification or request: no method")
	case obj["id"] != nil:
		return v.validateBranch("ServerRequest", method, inst)
	}
	return v.validateNotification(method, obj)
}

// ValidateNotification validates a whole server notification message.
func (v *V) ValidateNotification(method string, msg []byte) error {
	inst, err := parse(msg)
	if err != nil {
		return err
	}
	obj, _ := inst.(map[string]any)
	return v.validateNotification(method, obj)
}

func (v *V) validateNotification(method string, obj map[string]any) error {
	if n, ok := obj["emittedAtMs"].(json.Number); !ok || strings.ContainsAny(string(n), ".eE-") {
		return fmt.Errorf("%s: emittedAtMs must be a non-negative integer, got %v", method, obj["emittedAtMs"])
	}
	return v.validateBranch("ServerNotification", method, obj)
}

// ValidateServerRequest validates a whole server → client request message.
func (v *V) ValidateServerRequest(method string, msg []byte) error {
	inst, err := parse(msg)
	if err != nil {
		return err
	}
	return v.validateBranch("ServerRequest", method, inst)
}

// ValidateClientRequest validates a whole client → server request message.
func (v *V) ValidateClientRequest(method string, msg []byte) error {
	inst, err := parse(msg)
	if err != nil {
		return err
	}
	return v.validateBranch("ClientRequest", method, inst)
}

// ValidateResponse validates the result of a client request.
func (v *V) ValidateResponse(method string, result []byte) error {
	return v.validateResult("ClientRequest", method, result)
}

// ValidateClientResponse validates a client's result for a server request.
func (v *V) ValidateClientResponse(method string, result []byte) error {
	return v.validateResult("ServerRequest", method, result)
}

func (v *V) validateResult(kind, method string, result []byte) error {
	if !v.Has(kind, method) {
		return fmt.Errorf("%w: %s %s", ErrNotInSchema, kind, method)
	}
	ref := v.ResultRef(kind, method)
	if ref == "" {
		return fmt.Errorf("%w: no result type for %s", ErrNotInSchema, method)
	}
	s, err := v.schema(ref)
	if err != nil {
		return err
	}
	inst, err := parse(result)
	if err != nil {
		return err
	}
	return s.Validate(inst)
}
