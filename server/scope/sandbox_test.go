package scope

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core/policy"
)

func TestWiderThanTheConfiguredSandbox(t *testing.T) {
	ws := func(roots ...string) policy.SandboxPolicy {
		return policy.SandboxPolicy{Mode: policy.SandboxWorkspaceWrite, WritableRoots: roots}
	}
	net := func(p policy.SandboxPolicy) policy.SandboxPolicy { p.NetworkAccess = true; return p }
	excl := func(p policy.SandboxPolicy, slash, env bool) policy.SandboxPolicy {
		p.ExcludeSlashTmp, p.ExcludeTmpdirEnvVar = slash, env
		return p
	}
	cases := []struct {
		name         string
		asked, limit policy.SandboxPolicy
		want         string // a part of the reason; "" when not wider
	}{
		{"same read-only", policy.ReadOnly(), policy.ReadOnly(), ""},
		{"workspace-write over read-only", ws(), policy.ReadOnly(), `with sandbox "workspace-write" (the configured sandbox is "read-only")`},
		{"full over workspace-write", policy.FullAccess(), ws(), `with sandbox "danger-full-access" (the configured sandbox is "workspace-write")`},
		{"external over workspace-write", policy.SandboxPolicy{Mode: policy.SandboxExternal}, ws(), `with sandbox "external-sandbox"`},
		{"read-only under workspace-write", policy.ReadOnly(), ws("/srv"), ""},
		{"anything under full access", net(ws("/etc")), policy.FullAccess(), ""},
		{"network over read-only", net(policy.ReadOnly()), policy.ReadOnly(), "with network access (the configured sandbox has none)"},
		{"network over workspace-write", net(ws()), ws(), "with network access"},
		{"network allowed", net(ws()), net(ws()), ""},
		{"extra root", ws("/home/agentd"), ws(), `with writable root "/home/agentd" (not within a writable root of the configured sandbox)`},
		{"configured root", ws("/srv/data"), ws("/srv/data"), ""},
		{"root inside a configured one", ws("/srv/data/sub"), ws("/srv/data"), ""},
		{"root beside a configured one", ws("/srv/database"), ws("/srv/data"), `with writable root "/srv/database"`},
		{"root above a configured one", ws("/srv"), ws("/srv/data"), `with writable root "/srv"`},
		{"relative root from the cwd", ws("sub"), ws("/work/proj"), ""},
		{"relative root escaping the cwd", ws("../other"), ws("/work/proj"), `with writable root "/work/other"`},
		{"/tmp the configuration excludes", ws(), excl(ws(), true, false), "with /tmp writable (the configured sandbox excludes it)"},
		{"$TMPDIR the configuration excludes", excl(ws(), true, false), excl(ws(), true, true), "with $TMPDIR writable (the configured sandbox excludes it)"},
		{"excluding more", excl(ws(), true, true), ws(), ""},
	}
	for _, c := range cases {
		got := Wider(c.asked, c.limit, "/work/proj")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: Wider = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSandboxRefusalText(t *testing.T) {
	ws := policy.WorkspaceWrite()
	perr := Sandbox(Operate, "command/exec", ws, policy.ReadOnly(), "/w")
	want := `token scope "operate" does not allow command/exec with sandbox "workspace-write" (the configured sandbox is "read-only")`
	if perr == nil || perr.Code != -32600 || perr.Message != want {
		t.Fatalf("Sandbox = %v, want -32600 %q", perr, want)
	}
	if Sandbox(Admin, "command/exec", policy.FullAccess(), policy.ReadOnly(), "/w") != nil {
		t.Fatal("admin refused")
	}
}

// A writable cwd may neither be agentd's home, nor lie inside it, nor
// hold it (/tmp holding a test's home); links are followed.
func TestHomeCwd(t *testing.T) {
	tree := t.TempDir()
	home := filepath.Join(tree, "home")
	other := filepath.Join(tree, "other")
	for _, d := range []string{filepath.Join(home, "sessions"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(tree, "link")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	ws := policy.WorkspaceWrite()
	for _, cwd := range []string{home, filepath.Join(home, "sessions"), tree, "/", link} {
		perr := HomeCwd(Operate, "thread/start", cwd, home, ws)
		want := `token scope "operate" does not allow thread/start with cwd "` + cwd + `" (agentd's home "` + home + `" would be writable)`
		if perr == nil || perr.Message != want {
			t.Errorf("cwd %s: HomeCwd = %v, want %q", cwd, perr, want)
		}
	}
	if perr := HomeCwd(Operate, "thread/start", other, home, ws); perr != nil {
		t.Errorf("a sibling of the home refused: %v", perr)
	}
	if perr := HomeCwd(Operate, "thread/start", home, home, policy.ReadOnly()); perr != nil {
		t.Errorf("a read-only cwd refused: %v", perr)
	}
	if perr := HomeCwd(Admin, "thread/start", home, home, ws); perr != nil {
		t.Errorf("admin refused: %v", perr)
	}
}

func TestClampNarrowsWhatAThreadBrings(t *testing.T) {
	ws := policy.WorkspaceWrite()
	sp, ap, changed := Clamp(Operate, policy.FullAccess(), ws, "/w", policy.ApprovalNever, policy.ApprovalOnRequest)
	if !changed || sp.Mode != policy.SandboxWorkspaceWrite || ap != policy.ApprovalOnRequest {
		t.Fatalf("Clamp = %v %v %v", sp, ap, changed)
	}
	sp, ap, changed = Clamp(Operate, policy.ReadOnly(), ws, "/w", policy.ApprovalNever, policy.ApprovalNever)
	if changed || sp.Mode != policy.SandboxReadOnly || ap != policy.ApprovalNever {
		t.Fatalf("within the configuration: Clamp = %v %v %v", sp, ap, changed)
	}
	if _, _, changed = Clamp(Admin, policy.FullAccess(), policy.ReadOnly(), "/w", policy.ApprovalNever, policy.ApprovalUntrusted); changed {
		t.Fatal("admin clamped")
	}
}

func TestModelInstructionsFileIsProtected(t *testing.T) {
	for _, k := range []string{"model_instructions_file", "profiles.p.model_instructions_file"} {
		if !ProtectedKey(strings.Split(k, ".")) {
			t.Errorf("%s is not protected", k)
		}
	}
	perr := ConfigOverrides(Operate, "thread/start", map[string]any{"model_instructions_file": "/etc/shadow"})
	want := `token scope "operate" does not allow thread/start with config.model_instructions_file (a protected key; see docs/security.md)`
	if perr == nil || perr.Message != want {
		t.Fatalf("ConfigOverrides = %v, want %q", perr, want)
	}
}
