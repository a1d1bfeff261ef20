package configedit

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// referenceConfig is the config.toml of the reference transcript
// utils.jsonl (its layer content, in a layout of our own).
const referenceConfig = `# written by the acceptance harness
model = "gpt-5.5"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:18118/v1"
wire_api = "responses"
requires_openai_auth = false
stream_max_retries = 1
request_max_retries = 1
`

func mustApply(t *testing.T, src string, edits ...Edit) *Result {
	t.Helper()
	res, err := Apply([]byte(src), edits)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	got, err := Parse(res.Text)
	if err != nil {
		t.Fatalf("result does not parse: %v\n%s", err, res.Text)
	}
	if !Equal(got, res.Doc) {
		t.Fatalf("result text %s does not hold the document %s", res.Text, canonicalJSON(res.Doc))
	}
	return res
}

// jsonValue decodes a JSON literal as the protocol decoder would.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVersionsMatchReference replays the reference transcript's writes:
// the versions it reported are reproduced exactly.
func TestVersionsMatchReference(t *testing.T) {
	doc, err := Parse([]byte(referenceConfig))
	if err != nil {
		t.Fatal(err)
	}
	if v := Version(doc); v != "sha256:1c6fe696107b0bed92dc5c70f4c31ecfd34157fc1e52656cb7e9aa680439c039" {
		t.Fatalf("initial version %s", v)
	}
	if v := Version(map[string]any{}); v != "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Fatalf("empty version %s", v)
	}
	src := referenceConfig
	for _, c := range []struct {
		edits []Edit
		want  string
	}{
		{[]Edit{{KeyPath: "model_reasoning_effort", Value: "high"}}, "sha256:db2a616512b2667b900c8ddc5f819232ad0283c5595814234ec3e48465157990"},
		{[]Edit{{KeyPath: "no_such_key", Value: jsonValue(t, "1")}}, "sha256:1754ae5c292e78268b2cc0c94023a42ee7938c0014d595ab2f842249bf0442a6"},
		{[]Edit{{KeyPath: "model_verbosity", Value: "low"}, {KeyPath: "tools.web_search", Value: false, Upsert: true}},
			"sha256:7afb51e07ce862eab6568161dc8f31af1892e5c8a66305c9d9f5b52fc4cdb69d"},
	} {
		res := mustApply(t, src, c.edits...)
		if res.Version != c.want {
			t.Fatalf("after %+v: version %s, want %s\n%s", c.edits, res.Version, c.want, res.Text)
		}
		if !res.InPlace {
			t.Fatalf("after %+v: rewritten, want an in-place edit", c.edits)
		}
		src = string(res.Text)
	}
	if !strings.HasPrefix(src, "# written by the acceptance harness\n") {
		t.Fatalf("comment lost:\n%s", src)
	}
}

func TestInPlaceEdits(t *testing.T) {
	const src = `# top comment
model = "gpt-5.5" # the model
approval_policy = "on-request"

# providers follow
[model_providers.mock]
name = "mock" # display name
base_url = "http://x"

[tools]
web_search = true
`
	for _, c := range []struct {
		name  string
		edits []Edit
		want  string
	}{
		{"replace keeps the trailing comment", []Edit{{KeyPath: "model", Value: "o3"}},
			strings.Replace(src, `model = "gpt-5.5" # the model`, `model = "o3" # the model`, 1)},
		{"new root key after the last root key", []Edit{{KeyPath: "sandbox_mode", Value: "workspace-write"}},
			strings.Replace(src, "approval_policy = \"on-request\"\n", "approval_policy = \"on-request\"\nsandbox_mode = \"workspace-write\"\n", 1)},
		{"new key in its table", []Edit{{KeyPath: "tools.view_image", Value: false}},
			src + "view_image = false\n"},
		{"new key in a nested table", []Edit{{KeyPath: "model_providers.mock.wire_api", Value: "responses"}},
			strings.Replace(src, "base_url = \"http://x\"\n", "base_url = \"http://x\"\nwire_api = \"responses\"\n", 1)},
		{"remove a key and its line", []Edit{{KeyPath: "approval_policy", Value: nil}},
			strings.Replace(src, "approval_policy = \"on-request\"\n", "", 1)},
		{"remove a missing key", []Edit{{KeyPath: "nope.nothing", Value: nil}}, src},
		{"upsert into a table", []Edit{{KeyPath: "tools", Value: jsonValue(t, `{"web_search": false, "x": 1}`), Upsert: true}},
			strings.Replace(src, "web_search = true\n", "web_search = false\nx = 1\n", 1)},
		{"new table as dotted keys", []Edit{{KeyPath: "features", Value: jsonValue(t, `{"a": true, "b": "c d"}`)}},
			strings.Replace(src, "approval_policy = \"on-request\"\n", "approval_policy = \"on-request\"\nfeatures.a = true\nfeatures.b = \"c d\"\n", 1)},
		{"odd keys are quoted", []Edit{{KeyPath: "model_providers.my provider.name", Value: "x\"y\n"}},
			strings.Replace(src, "approval_policy = \"on-request\"\n", "approval_policy = \"on-request\"\nmodel_providers.\"my provider\".name = \"x\\\"y\\n\"\n", 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := mustApply(t, src, c.edits...)
			if !res.InPlace {
				t.Fatalf("rewritten:\n%s", res.Text)
			}
			if string(res.Text) != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", res.Text, c.want)
			}
		})
	}
}

func TestRootKeyBeforeFirstTable(t *testing.T) {
	const src = "# only tables\n[tools]\nweb_search = true\n"
	res := mustApply(t, src, Edit{KeyPath: "model", Value: "o3"})
	if want := "# only tables\nmodel = \"o3\"\n\n[tools]\nweb_search = true\n"; string(res.Text) != want || !res.InPlace {
		t.Fatalf("got (in place %v):\n%s", res.InPlace, res.Text)
	}
	res = mustApply(t, "", Edit{KeyPath: "a.b", Value: jsonValue(t, "[1, 2.5, \"x\"]")})
	if want := "a.b = [1, 2.5, \"x\"]\n"; string(res.Text) != want {
		t.Fatalf("got %q", res.Text)
	}
	res = mustApply(t, "x = 1", Edit{KeyPath: "y", Value: true})
	if want := "x = 1\ny = true\n"; string(res.Text) != want {
		t.Fatalf("no final newline: got %q", res.Text)
	}
}

func TestInlineTables(t *testing.T) {
	const src = "p = { a = 1, b = 2 } # inline\n"
	res := mustApply(t, src, Edit{KeyPath: "p", Value: jsonValue(t, `{"b": null, "c": 3}`), Upsert: true})
	if want := "p = { a = 1, c = 3 } # inline\n"; string(res.Text) != want || !res.InPlace {
		t.Fatalf("got %q", res.Text)
	}
	// Reaching inside an inline table rewrites the file, correctly.
	res = mustApply(t, src, Edit{KeyPath: "p.a", Value: jsonValue(t, "5")})
	if res.InPlace {
		t.Fatalf("edited inside an inline table in place: %q", res.Text)
	}
	if got := lookup(res.Doc, []string{"p", "a"}); got != int64(5) {
		t.Fatalf("p.a = %v", got)
	}
}

// TestRewrites covers edits that cannot be made in place: the document is
// still right, the comments are gone.
func TestRewrites(t *testing.T) {
	const src = "# c\n[tools]\nweb_search = true\n[[servers]]\nname = \"a\"\n"
	for _, e := range []Edit{
		{KeyPath: "tools", Value: jsonValue(t, `{"x": 1}`)},
		{KeyPath: "tools", Value: nil},
		{KeyPath: "tools", Value: "flat"},
		{KeyPath: "servers", Value: jsonValue(t, `[{"name": "b"}]`)},
	} {
		res := mustApply(t, src, e)
		if res.InPlace {
			t.Fatalf("%+v: in place:\n%s", e, res.Text)
		}
	}
}

func TestInvalidEdits(t *testing.T) {
	for _, c := range []struct {
		src  string
		edit Edit
	}{
		{"model = \"x\"\n", Edit{KeyPath: "model.sub", Value: "y"}},
		{"", Edit{KeyPath: "a..b", Value: "y"}},
		{"", Edit{KeyPath: "", Value: "y"}},
		{"", Edit{KeyPath: "a", Value: []any{"x", nil}}},
		{"", Edit{KeyPath: "a", Value: struct{}{}}},
	} {
		if _, err := Apply([]byte(c.src), []Edit{c.edit}); !errors.Is(err, ErrInvalidEdit) {
			t.Errorf("%+v: err = %v, want ErrInvalidEdit", c.edit, err)
		}
	}
	if _, err := Apply([]byte("a = "), nil); err == nil || errors.Is(err, ErrInvalidEdit) {
		t.Errorf("malformed file: err = %v", err)
	}
}

func TestLeaves(t *testing.T) {
	doc, err := Parse([]byte("arr = [1, 2]\n" + referenceConfig + "[empty]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(Leaves(doc), ",")
	want := "arr,model,model_provider,model_providers.mock.base_url,model_providers.mock.name,model_providers.mock.request_max_retries," +
		"model_providers.mock.requires_openai_auth,model_providers.mock.stream_max_retries,model_providers.mock.wire_api"
	if got != want {
		t.Fatalf("got %s", got)
	}
}

// FuzzApply checks that whatever the file and the edit, Apply either
// refuses or returns text that reads back as the document it reports.
func FuzzApply(f *testing.F) {
	f.Add(referenceConfig, "model_providers.mock.name", `"x"`, false)
	f.Add("# c\n[a]\nb = 1\n[[c]]\nd = 2\n", "a", `{"e": {"f": [1]}}`, true)
	f.Add("p = { a = 1 }\n", "p.a", `null`, false)
	f.Add("a.b.c = 1\n[x.y]\nz = 2\n", "x.q", `{"r": 1.5}`, true)
	f.Fuzz(func(t *testing.T, src, keyPath, value string, upsert bool) {
		var v any
		if json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		res, err := Apply([]byte(src), []Edit{{KeyPath: keyPath, Value: v, Upsert: upsert}})
		if err != nil {
			return
		}
		got, err := Parse(res.Text)
		if err != nil {
			t.Fatalf("result does not parse: %v\n%q", err, res.Text)
		}
		if !Equal(got, res.Doc) {
			t.Fatalf("result %q does not hold %s", res.Text, canonicalJSON(res.Doc))
		}
	})
}
