package policy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDecidePatchTable(t *testing.T) {
	root := t.TempDir()
	in := filepath.Join(root, "a.go")
	out := filepath.Join(t.TempDir(), "b.go")
	roots := []string{root}
	ws := WorkspaceWrite()
	cases := []struct {
		p     ApprovalPolicy
		sp    SandboxPolicy
		paths []string
		want  PatchAction
	}{
		{ApprovalUntrusted, ws, []string{in}, PatchAsk},
		{ApprovalUntrusted, FullAccess(), []string{in}, PatchAsk},
		{ApprovalOnRequest, ws, []string{in}, PatchApply},
		{ApprovalOnRequest, ws, []string{in, out}, PatchAsk},
		{ApprovalOnFailure, ws, []string{in}, PatchApply},
		{ApprovalOnFailure, ws, []string{out}, PatchAsk},
		{ApprovalNever, ws, []string{in}, PatchApply},
		{ApprovalNever, ws, []string{out}, PatchReject},
		{ApprovalNever, FullAccess(), []string{out}, PatchApply},
		{ApprovalOnRequest, ReadOnly(), []string{in}, PatchAsk},
		{ApprovalNever, ws, []string{filepath.Join(root, ".git", "config")}, PatchReject},
		{ApprovalNever, ws, []string{"rel.go"}, PatchReject},
	}
	for _, c := range cases {
		r := roots
		if c.sp.Mode == SandboxReadOnly {
			r = WritableRoots(c.sp, root)
		}
		d := DecidePatch(c.p, c.sp, c.paths, r, nil)
		if d.Action != c.want {
			t.Errorf("%s/%s %q: %+v, want %s", c.p, c.sp.Mode, c.paths, d, c.want)
		}
		if d.Action == PatchReject && d.Reject == "" {
			t.Errorf("reject without a reason: %+v", d)
		}
	}
	d := DecidePatch(ApprovalOnRequest, ws, []string{out}, roots, nil)
	if d.GrantRoot != filepath.Dir(out) {
		t.Errorf("grant root %q, want %q", d.GrantRoot, filepath.Dir(out))
	}
	s := NewSessionApprovals()
	s.ApproveRoot(filepath.Dir(out))
	if d := DecidePatch(ApprovalOnRequest, ws, []string{in, out}, roots, s); d.Action != PatchApply {
		t.Errorf("approved root still asks: %+v", d)
	}
	if d := DecidePatch(ApprovalUntrusted, ws, []string{out}, roots, s); d.Action != PatchApply {
		t.Errorf("untrusted with approved root asks: %+v", d)
	}
}

func TestPatchThroughSymlinkOutsideRoot(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "link", "new.txt")
	if IsWritable(p, []string{root}) {
		t.Fatal("a path through a link leaving the root counts as writable")
	}
	if d := DecidePatch(ApprovalNever, WorkspaceWrite(), []string{p}, []string{root}, nil); d.Action != PatchReject {
		t.Fatalf("decision %+v", d)
	}
}

func TestWritableRoots(t *testing.T) {
	t.Setenv("TMPDIR", "/var/tmp/agentd-test")
	cwd := "/work/proj"
	sp := SandboxPolicy{Mode: SandboxWorkspaceWrite, WritableRoots: []string{"/data", "rel", "/work/proj"}}
	got := WritableRoots(sp, cwd)
	want := []string{"/work/proj", "/data", "/work/proj/rel", "/var/tmp/agentd-test", "/tmp"}
	if !slices.Equal(got, want) {
		t.Errorf("WritableRoots = %q, want %q", got, want)
	}
	sp.ExcludeTmpdirEnvVar, sp.ExcludeSlashTmp = true, true
	if got := WritableRoots(sp, cwd); slices.Contains(got, "/tmp") || slices.Contains(got, "/var/tmp/agentd-test") {
		t.Errorf("excluded temp dirs present: %q", got)
	}
	if got := WritableRoots(ReadOnly(), cwd); got != nil {
		t.Errorf("read-only roots %q", got)
	}
	if got := WritableRoots(FullAccess(), cwd); got != nil {
		t.Errorf("full-access roots %q", got)
	}
	if !IsWritable("/work/proj/a/b.go", got2(sp, cwd)) || IsWritable("/work/project/x", got2(sp, cwd)) {
		t.Error("prefix containment wrong")
	}
}

func got2(sp SandboxPolicy, cwd string) []string { return WritableRoots(sp, cwd) }
