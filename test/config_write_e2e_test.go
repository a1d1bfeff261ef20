package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configTOML is a config.toml with comments that writes must keep.
const configTOML = `# agentd test configuration
model = "demo" # the built-in model
model_provider = "demo"

# limits
[server]
max_inflight = 64
`

type writeResult struct {
	Status             string  `json:"status"`
	Version            string  `json:"version"`
	FilePath           string  `json:"filePath"`
	OverriddenMetadata *string `json:"overriddenMetadata"`
}

type readResult struct {
	Config  map[string]any `json:"config"`
	Origins map[string]struct {
		Name struct {
			Type    string  `json:"type"`
			File    string  `json:"file"`
			Profile *string `json:"profile"`
		} `json:"name"`
		Version string `json:"version"`
	} `json:"origins"`
	Layers []struct {
		Version string         `json:"version"`
		Config  map[string]any `json:"config"`
	} `json:"layers"`
}

func TestConfigWrite(t *testing.T) {
	d, c := utilClient(t, Options{ConfigTOML: configTOML})
	file := filepath.Join(d.Home, "config.toml")

	var r readResult
	validResult(t, "config/read", c.Call("config/read", map[string]any{"includeLayers": true}), &r)
	o, ok := r.Origins["server.max_inflight"]
	if !ok || o.Name.Type != "user" || o.Name.File != file || o.Name.Profile != nil || !strings.HasPrefix(o.Version, "sha256:") {
		t.Fatalf("origins %+v", r.Origins)
	}
	if len(r.Origins) != 3 || len(r.Layers) != 1 || r.Layers[0].Version != o.Version || r.Layers[0].Config["model_provider"] != "demo" {
		t.Fatalf("origins %+v layers %+v", r.Origins, r.Layers)
	}
	v0 := o.Version

	var w writeResult
	validResult(t, "config/value/write", c.Call("config/value/write", map[string]any{
		"keyPath": "model_reasoning_effort", "value": "high", "mergeStrategy": "replace", "expectedVersion": v0,
	}), &w)
	if w.Status != "ok" || w.FilePath != file || w.OverriddenMetadata != nil || w.Version == v0 {
		t.Fatalf("write %+v", w)
	}
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(configTOML, "model_provider = \"demo\"\n", "model_provider = \"demo\"\nmodel_reasoning_effort = \"high\"\n", 1)
	if string(text) != want {
		t.Fatalf("file after the write:\n%s\nwant:\n%s", text, want)
	}
	var r2 readResult
	validResult(t, "config/read", c.Call("config/read", map[string]any{}), &r2)
	if r2.Origins["model_reasoning_effort"].Version != w.Version || r2.Layers != nil {
		t.Fatalf("after the write: %+v", r2)
	}

	// A stale version is refused, with the reference's message and code.
	m := c.Call("config/value/write", map[string]any{"keyPath": "model", "value": "x", "mergeStrategy": "replace", "expectedVersion": v0})
	WantError(t, m, codeInvalidRequest, "Configuration was modified since last read. Fetch latest version and retry.")
	wantErrorData(t, m, `{"config_write_error_code":"configVersionConflict"}`)

	// Unknown keys are written; a batch applies all its edits.
	validResult(t, "config/value/write", c.Call("config/value/write", map[string]any{"keyPath": "no_such_key", "value": 1, "mergeStrategy": "replace"}), &w)
	validResult(t, "config/batchWrite", c.Call("config/batchWrite", map[string]any{"edits": []map[string]any{
		{"keyPath": "model_verbosity", "value": "low", "mergeStrategy": "replace"},
		{"keyPath": "tools.web_search", "value": false, "mergeStrategy": "upsert"},
		{"keyPath": "server", "value": map[string]any{"max_inflight": 32}, "mergeStrategy": "upsert"},
	}, "expectedVersion": w.Version}), &w)
	text, _ = os.ReadFile(file)
	for _, s := range []string{"# agentd test configuration\n", "# the built-in model", "model_verbosity = \"low\"", "tools.web_search = false", "max_inflight = 32", "no_such_key = 1"} {
		if !strings.Contains(string(text), s) {
			t.Fatalf("file lacks %q:\n%s", s, text)
		}
	}

	// A value agentd could not start with is refused; the file stays.
	m = c.Call("config/value/write", map[string]any{"keyPath": "approval_policy", "value": "sometimes", "mergeStrategy": "replace"})
	WantError(t, m, codeInvalidRequest, "")
	wantErrorData(t, m, `{"config_write_error_code":"configValidationError"}`)
	if !strings.Contains(m.Error.Message, "approval_policy") {
		t.Fatalf("message %q", m.Error.Message)
	}
	m = c.Call("config/value/write", map[string]any{"keyPath": "model.sub", "value": 1, "mergeStrategy": "replace"})
	wantErrorData(t, m, `{"config_write_error_code":"configValidationError"}`)
	m = c.Call("config/value/write", map[string]any{"keyPath": "model", "value": "x", "mergeStrategy": "replace", "filePath": "/etc/other.toml"})
	wantErrorData(t, m, `{"config_write_error_code":"configLayerReadonly"}`)
	if after, _ := os.ReadFile(file); string(after) != string(text) {
		t.Fatalf("refused writes changed the file:\n%s", after)
	}

	// A missing file is created; null removes a key.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	validResult(t, "config/value/write", c.Call("config/value/write", map[string]any{
		"keyPath": "model", "value": "demo", "mergeStrategy": "replace",
		"expectedVersion": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
	}), &w)
	validResult(t, "config/value/write", c.Call("config/value/write", map[string]any{"keyPath": "model", "value": nil, "mergeStrategy": "replace"}), &w)
	if text, _ := os.ReadFile(file); strings.TrimSpace(string(text)) != "" {
		t.Fatalf("after removing the only key: %q", text)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("created file: %v %v", st, err)
	}
}
