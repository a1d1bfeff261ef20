package scope

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
)

// Sandbox policies as a client sends them.
var (
	readOnly   = protocol.SandboxPolicy{ReadOnly: &protocol.ReadOnlySandbox{}}
	fullAccess = protocol.SandboxPolicy{DangerFullAccess: &protocol.Empty{}}
	external   = protocol.SandboxPolicy{ExternalSandbox: &protocol.ExternalSandbox{}}
)

func ws(roots ...string) protocol.SandboxPolicy {
	w := &protocol.WorkspaceWriteSandbox{WritableRoots: protocol.List[protocol.AbsPath]{}}
	for _, r := range roots {
		w.WritableRoots = append(w.WritableRoots, protocol.AbsPath(r))
	}
	return protocol.SandboxPolicy{WorkspaceWrite: w}
}

func withNet(p protocol.SandboxPolicy) protocol.SandboxPolicy {
	switch {
	case p.WorkspaceWrite != nil:
		w := *p.WorkspaceWrite
		w.NetworkAccess = true
		return protocol.SandboxPolicy{WorkspaceWrite: &w}
	case p.ReadOnly != nil:
		return protocol.SandboxPolicy{ReadOnly: &protocol.ReadOnlySandbox{NetworkAccess: true}}
	}
	return p
}

func excluding(p protocol.SandboxPolicy, slash, env bool) protocol.SandboxPolicy {
	w := *p.WorkspaceWrite
	w.ExcludeSlashTmp, w.ExcludeTmpdirEnvVar = slash, env
	return protocol.SandboxPolicy{WorkspaceWrite: &w}
}

func TestWiderThanTheConfiguredSandbox(t *testing.T) {
	cases := []struct {
		name         string
		asked, limit protocol.SandboxPolicy
		want         string // the reason; "" when not wider
	}{
		{"same read-only", readOnly, readOnly, ""},
		{"workspace-write over read-only", ws(), readOnly, `with sandbox "workspace-write" (the configured sandbox is "read-only")`},
		{"full over workspace-write", fullAccess, ws(), `with sandbox "danger-full-access" (the configured sandbox is "workspace-write")`},
		{"external over workspace-write", external, ws(), `with sandbox "external-sandbox" (the configured sandbox is "workspace-write")`},
		{"read-only under workspace-write", readOnly, ws("/srv"), ""},
		{"anything under full access", withNet(ws("/etc")), fullAccess, ""},
		{"network over read-only", withNet(readOnly), readOnly, "with network access (the configured sandbox has none)"},
		{"network over workspace-write", withNet(ws()), ws(), "with network access (the configured sandbox has none)"},
		{"network allowed", withNet(ws()), withNet(ws()), ""},
		{"read-only network where workspace-write has it", withNet(readOnly), withNet(ws()), ""},
		{"extra root", ws("/home/agentd"), ws(), `with writable root "/home/agentd" (not within a writable root of the configured sandbox)`},
		{"configured root", ws("/srv/data"), ws("/srv/data"), ""},
		{"root inside a configured one", ws("/srv/data/sub"), ws("/srv/data/"), ""},
		{"root beside a configured one", ws("/srv/database"), ws("/srv/data"), `with writable root "/srv/database" (not within a writable root of the configured sandbox)`},
		{"root above a configured one", ws("/srv"), ws("/srv/data"), `with writable root "/srv" (not within a writable root of the configured sandbox)`},
		{"root dotted out of a configured one", ws("/srv/data/../etc"), ws("/srv/data"), `with writable root "/srv/etc" (not within a writable root of the configured sandbox)`},
		{"relative root from the cwd", ws("sub"), ws("/work/proj"), ""},
		{"relative root escaping the cwd", ws("../other"), ws("/work/proj"), `with writable root "/work/other" (not within a writable root of the configured sandbox)`},
		{"/tmp the configuration excludes", ws(), excluding(ws(), true, false), "with /tmp writable (the configured sandbox excludes it)"},
		{"$TMPDIR the configuration excludes", excluding(ws(), true, false), excluding(ws(), true, true), "with $TMPDIR writable (the configured sandbox excludes it)"},
		{"excluding more", excluding(ws(), true, true), ws(), ""},
	}
	for _, c := range cases {
		if got := Wider(c.asked, c.limit, "/work/proj"); got != c.want {
			t.Errorf("%s: Wider = %q, want %q", c.name, got, c.want)
		}
	}
}

// A writable root that is a link leads where the link points: a link
// inside a configured root to a directory outside it is refused.
func TestWiderFollowsLinks(t *testing.T) {
	tree := t.TempDir()
	root, outside := filepath.Join(tree, "root"), filepath.Join(tree, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "out")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if got := Wider(ws(link), ws(root), tree); !strings.Contains(got, "with writable root") {
		t.Fatalf("a link out of the configured root: Wider = %q", got)
	}
	if got := Wider(ws(filepath.Join(root, "sub")), ws(root), tree); got != "" {
		t.Fatalf("inside the configured root: Wider = %q", got)
	}
}

func TestSandboxRefusalText(t *testing.T) {
	perr := Sandbox(Operate, "command/exec", ws(), readOnly, "/w")
	want := `token scope "operate" does not allow command/exec with sandbox "workspace-write" (the configured sandbox is "read-only")`
	if perr == nil || perr.Code != -32600 || perr.Message != want {
		t.Fatalf("Sandbox = %v, want -32600 %q", perr, want)
	}
	if Sandbox(Admin, "command/exec", fullAccess, readOnly, "/w") != nil {
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
	for _, cwd := range []string{home, filepath.Join(home, "sessions"), tree, "/", link} {
		perr := HomeCwd(Operate, "thread/start", cwd, home, ws())
		want := `token scope "operate" does not allow thread/start with cwd "` + cwd + `" (agentd's home "` + home + `" would be writable)`
		if perr == nil || perr.Message != want {
			t.Errorf("cwd %s: HomeCwd = %v, want %q", cwd, perr, want)
		}
	}
	if perr := HomeCwd(Operate, "thread/start", other, home, ws()); perr != nil {
		t.Errorf("a sibling of the home refused: %v", perr)
	}
	if perr := HomeCwd(Operate, "thread/start", home, home, readOnly); perr != nil {
		t.Errorf("a read-only cwd refused: %v", perr)
	}
	if perr := HomeCwd(Admin, "thread/start", home, home, ws()); perr != nil {
		t.Errorf("admin refused: %v", perr)
	}
}

func TestClampNarrowsWhatAThreadBrings(t *testing.T) {
	sp, ap, changed := Clamp(Operate, fullAccess, ws(), "/w", "never", "on-request")
	if !changed || sp.WorkspaceWrite == nil || ap != "on-request" {
		t.Fatalf("Clamp = %+v %v %v", sp, ap, changed)
	}
	sp, ap, changed = Clamp(Operate, ws("/home/agentd"), ws("/srv"), "/w", "untrusted", "on-request")
	if !changed || len(sp.WorkspaceWrite.WritableRoots) != 1 || sp.WorkspaceWrite.WritableRoots[0] != "/srv" || ap != "untrusted" {
		t.Fatalf("an extra root: Clamp = %+v %v %v", sp, ap, changed)
	}
	sp, ap, changed = Clamp(Operate, readOnly, ws(), "/w", "never", "never")
	if changed || sp.ReadOnly == nil || ap != "never" {
		t.Fatalf("within the configuration: Clamp = %+v %v %v", sp, ap, changed)
	}
	if _, _, changed = Clamp(Admin, fullAccess, readOnly, "/w", "never", "untrusted"); changed {
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
