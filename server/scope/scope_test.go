package scope

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
)

// Every client request of the protocol that agentd has types for has an
// entry in the table, and every entry is such a method: a method added to
// the protocol without deciding who may call it fails here. The methods
// known by name only, never served, have none (they need Admin).
func TestEveryProtocolMethodHasAnEntry(t *testing.T) {
	known := map[string]bool{}
	for _, m := range protocol.Methods(protocol.ClientRequest) {
		if m.NameOnly {
			if _, ok := methods[m.Method]; ok {
				t.Errorf("%s is known by name only (never served) but has an entry in the scope table", m.Method)
			}
			continue
		}
		known[m.Method] = true
		if _, ok := methods[m.Method]; !ok {
			t.Errorf("protocol method %s has no entry in the scope table (server/scope/methods.go)", m.Method)
		}
	}
	for m := range methods {
		if !known[m] {
			t.Errorf("scope table entry %s is not a client request of the protocol", m)
		}
	}
	for m := range checked {
		if _, ok := methods[m]; !ok {
			t.Errorf("checked method %s has no entry", m)
		}
	}
}

func TestRequiredOutsideTheTableIsAdmin(t *testing.T) {
	if Required("test/sleep") != Admin || Required("thread/list") != Read || Required("turn/start") != Operate {
		t.Fatal("Required")
	}
}

func TestParseAndOrder(t *testing.T) {
	for _, s := range []Scope{Read, Operate, Admin} {
		got, err := Parse(s.String())
		if err != nil || got != s {
			t.Fatalf("Parse(%q) = %v, %v", s.String(), got, err)
		}
	}
	for _, bad := range []string{"", "Admin", "root", "read "} {
		if _, err := Parse(bad); err == nil {
			t.Fatalf("Parse(%q) accepted", bad)
		}
	}
	if !Admin.Allows(Operate) || !Operate.Allows(Read) || Read.Allows(Operate) || Operate.Allows(Admin) {
		t.Fatal("order")
	}
	var zero Scope
	if zero != Read {
		t.Fatal("the zero value must be the least scope")
	}
}

func TestDenyNamesScopeAndMethodAndIsBounded(t *testing.T) {
	e := Deny(Read, "thread/start", "")
	if e.Code != protocol.CodeInvalidRequest || e.Message != `token scope "read" does not allow thread/start` {
		t.Fatalf("%+v", e)
	}
	long := Deny(Operate, strings.Repeat("m", 1<<20), "")
	if len(long.Message) > 400 || !strings.Contains(long.Message, protocol.CutMarker) {
		t.Fatalf("refusal of a 1 MiB method is %d bytes", len(long.Message))
	}
}

func TestProtectedKey(t *testing.T) {
	for key, want := range map[string]bool{
		"model_providers":                        true,
		"model_providers.evil":                   true,
		"model_providers.openai.env_key":         true,
		"openai_base_url":                        true,
		"chatgpt_base_url":                       true,
		"tools.x.base_url":                       true,
		"mcp_servers.x.command":                  true,
		"notify":                                 true,
		"shell_environment_policy.set.PATH":      true,
		"sandbox_mode":                           true,
		"approval_policy":                        true,
		"sandbox_workspace_write.writable_roots": true,
		"projects./srv/x.trust_level":            true,
		"app_server.tokens.me":                   true,
		"fs.roots":                               true,
		"server.max_inflight":                    true,
		"profiles.p.model_providers.evil":        true,
		"profiles.p.sandbox_mode":                true,
		"profiles.p.approval_policy":             true,
		"profiles.p.projects./x.trust_level":     true,
		"model":                                  false,
		"model_provider":                         false,
		"model_reasoning_effort":                 false,
		"projects./srv/x":                        false,
		"projects./srv/x.other":                  false,
		"profiles":                               false,
		"profiles.p":                             false,
		"profiles.p.model":                       false,
		"features.shell_tool":                    false,
	} {
		if got := ProtectedKey(strings.Split(key, ".")); got != want {
			t.Errorf("ProtectedKey(%s) = %v, want %v", key, got, want)
		}
	}
}

// A change is found however it is made: a new table, a nested key, a
// table replaced or removed around a protected key; a write that leaves
// protected keys as they were is not a change.
func TestProtectedChange(t *testing.T) {
	base := map[string]any{
		"model": "m",
		"profiles": map[string]any{
			"p": map[string]any{"model": "x", "sandbox_mode": "read-only"},
		},
		"projects": map[string]any{"/srv/x": map[string]any{"trust_level": "untrusted"}},
	}
	clone := func(mut func(d map[string]any)) map[string]any {
		d := deepCopy(base).(map[string]any)
		mut(d)
		return d
	}
	for _, tc := range []struct {
		name  string
		after map[string]any
		want  string
	}{
		{"unrelated", clone(func(d map[string]any) { d["model"] = "other" }), ""},
		{"unchanged protected", clone(func(d map[string]any) { d["model_reasoning_effort"] = "low" }), ""},
		{"new provider", clone(func(d map[string]any) {
			d["model_providers"] = map[string]any{"evil": map[string]any{"base_url": "http://x"}}
		}), "model_providers"},
		{"provider in a profile", clone(func(d map[string]any) {
			d["profiles"].(map[string]any)["x"] = map[string]any{"model_providers": map[string]any{}}
		}), "profiles.x.model_providers"},
		{"base url", clone(func(d map[string]any) { d["openai_base_url"] = "http://x" }), "openai_base_url"},
		{"profile replaced", clone(func(d map[string]any) {
			d["profiles"].(map[string]any)["p"] = map[string]any{"model": "x"}
		}), "profiles.p.sandbox_mode"},
		{"profiles removed", clone(func(d map[string]any) { delete(d, "profiles") }), "profiles.p.sandbox_mode"},
		{"trust", clone(func(d map[string]any) {
			d["projects"].(map[string]any)["/srv/x"] = map[string]any{"trust_level": "trusted"}
		}), `projects."/srv/x".trust_level`},
		{"new project", clone(func(d map[string]any) {
			d["projects"].(map[string]any)["/srv/y"] = map[string]any{"trust_level": "trusted"}
		}), `projects."/srv/y".trust_level`},
		{"tokens", clone(func(d map[string]any) { d["app_server"] = map[string]any{} }), "app_server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, changed := ProtectedChange(base, tc.after)
			if key != tc.want || changed != (tc.want != "") {
				t.Fatalf("ProtectedChange = %q, %v; want %q", key, changed, tc.want)
			}
		})
	}
	if err := ConfigWrite(Admin, "config/value/write", base, map[string]any{}); err != nil {
		t.Fatalf("admin refused: %v", err)
	}
	err := ConfigWrite(Operate, "config/value/write", base, map[string]any{})
	if err == nil || !strings.HasPrefix(err.Message, `token scope "operate" does not allow config/value/write to change profiles.p.sandbox_mode`) {
		t.Fatalf("operate: %v", err)
	}
}

func deepCopy(v any) any {
	if m, ok := v.(map[string]any); ok {
		out := map[string]any{}
		for k, x := range m {
			out[k] = deepCopy(x)
		}
		return out
	}
	return v
}

func TestConfigOverrides(t *testing.T) {
	for _, tc := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"model": "x", "sandbox_mode": "danger-full-access", "approval_policy": "never"}, ""},
		{map[string]any{"model_providers.evil.base_url": "http://x"}, "with config.model_providers"},
		{map[string]any{"model_providers": map[string]any{"evil": map[string]any{}}}, "with config.model_providers"},
		{map[string]any{"profiles": map[string]any{"p": map[string]any{"notify": []any{"x"}}}}, "with config.profiles.p.notify"},
		{map[string]any{"shell_environment_policy.inherit": "all"}, "with config.shell_environment_policy"},
	} {
		err := ConfigOverrides(Operate, "thread/start", tc.cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v refused: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Message, tc.want)):
			t.Errorf("%v: %v, want %q", tc.cfg, err, tc.want)
		}
		if err := ConfigOverrides(Admin, "thread/start", tc.cfg); err != nil {
			t.Errorf("admin refused: %v", err)
		}
	}
}

func TestSandboxAndApproval(t *testing.T) {
	danger, ws := protocol.SandboxDangerFullAccess, protocol.SandboxWorkspaceWrite
	if e := SandboxMode(Operate, "thread/start", &danger); e == nil || e.Message != `token scope "operate" does not allow thread/start with sandbox "danger-full-access"` {
		t.Fatalf("%v", e)
	}
	if SandboxMode(Operate, "thread/start", &ws) != nil || SandboxMode(Admin, "thread/start", &danger) != nil || SandboxMode(Operate, "thread/start", nil) != nil {
		t.Fatal("SandboxMode refused what it may not")
	}
	full := &protocol.SandboxPolicy{DangerFullAccess: &protocol.Empty{}}
	ext := &protocol.SandboxPolicy{ExternalSandbox: &protocol.ExternalSandbox{}}
	ro := &protocol.SandboxPolicy{ReadOnly: &protocol.ReadOnlySandbox{}}
	if e := SandboxPolicy(Operate, "command/exec", full); e == nil || !strings.HasSuffix(e.Message, `command/exec with sandboxPolicy "dangerFullAccess"`) {
		t.Fatalf("%v", e)
	}
	if e := SandboxPolicy(Operate, "turn/start", ext); e == nil || !strings.HasSuffix(e.Message, `turn/start with sandboxPolicy "externalSandbox"`) {
		t.Fatalf("%v", e)
	}
	if SandboxPolicy(Operate, "turn/start", ro) != nil || SandboxPolicy(Admin, "turn/start", full) != nil {
		t.Fatal("SandboxPolicy refused what it may not")
	}
	never := protocol.ApprovalPolicy(protocol.ApprovalNever)
	onReq := protocol.ApprovalPolicy(protocol.ApprovalOnRequest)
	if e := Approval(Operate, "turn/start", &never, "on-request"); e == nil || !strings.Contains(e.Message, `turn/start with approvalPolicy "never"`) {
		t.Fatalf("%v", e)
	}
	if Approval(Operate, "turn/start", &never, "never") != nil || Approval(Operate, "turn/start", &onReq, "on-request") != nil || Approval(Admin, "turn/start", &never, "untrusted") != nil {
		t.Fatal("Approval refused what it may not")
	}
}

var update = flag.Bool("update", false, "rewrite the generated parts of docs/security.md")

const securityDoc = "../../docs/security.md"

// docs/security.md shows the table and the protected keys as the code has
// them: `go test ./server/scope -run SecurityDoc -update` rewrites them.
func TestSecurityDocMatchesTheCode(t *testing.T) {
	b, err := os.ReadFile(securityDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, part := range []struct{ name, body string }{
		{"scope table", renderTable()},
		{"protected keys", renderKeys()},
	} {
		begin, end := "<!-- begin "+part.name+" (generated", "<!-- end "+part.name+" -->"
		i := strings.Index(doc, begin)
		j := strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("docs/security.md has no %q … %q markers", begin, end)
		}
		i += strings.Index(doc[i:], "-->\n") + len("-->\n")
		if doc[i:j] == part.body {
			continue
		}
		if !*update {
			t.Errorf("docs/security.md: the %s is not the code's; run `go test ./server/scope -run SecurityDoc -update`. Want:\n%s", part.name, part.body)
			continue
		}
		doc = doc[:i] + part.body + doc[j:]
	}
	if *update {
		if err := os.WriteFile(securityDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func renderTable() string {
	var b strings.Builder
	b.WriteString("| scope needed | methods |\n|---|---|\n")
	for _, s := range []Scope{Read, Operate, Admin} {
		var ms []string
		for _, e := range Table() {
			if e.Scope != s {
				continue
			}
			m := "`" + e.Method + "`"
			if e.Checked {
				m += "†"
			}
			ms = append(ms, m)
		}
		fmt.Fprintf(&b, "| %s | %s |\n", s, strings.Join(ms, ", "))
	}
	return b.String()
}

func renderKeys() string {
	var b strings.Builder
	for _, k := range ProtectedKeys() {
		fmt.Fprintf(&b, "- `%s`\n", k)
	}
	return b.String()
}
