package policy

import (
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestDecideExecTable(t *testing.T) {
	write := []string{"/bin/bash", "-lc", "touch x"}
	safe := []string{"/bin/bash", "-lc", "ls -la"}
	ws := WorkspaceWrite()
	ro := ReadOnly()
	full := FullAccess()
	ext := SandboxPolicy{Mode: SandboxExternal}

	type want struct {
		ask, sandboxed, reject bool
	}
	cases := []struct {
		name     string
		policy   ApprovalPolicy
		sandbox  SandboxPolicy
		argv     []string
		escalate bool
		avail    bool
		want     want
	}{
		{"untrusted plain", ApprovalUntrusted, ws, write, false, true, want{ask: true, sandboxed: true}},
		{"untrusted safe", ApprovalUntrusted, ws, safe, false, true, want{sandboxed: true}},
		{"untrusted escalate", ApprovalUntrusted, ws, write, true, true, want{ask: true}},
		{"untrusted safe escalate", ApprovalUntrusted, ro, safe, true, true, want{sandboxed: true}},
		{"on-request plain", ApprovalOnRequest, ws, write, false, true, want{sandboxed: true}},
		{"on-request read-only plain", ApprovalOnRequest, ro, write, false, true, want{sandboxed: true}},
		{"on-request escalate", ApprovalOnRequest, ws, write, true, true, want{ask: true}},
		{"on-failure plain", ApprovalOnFailure, ws, write, false, true, want{sandboxed: true}},
		{"on-failure escalate", ApprovalOnFailure, ws, write, true, true, want{sandboxed: true}},
		{"never plain", ApprovalNever, ws, write, false, true, want{sandboxed: true}},
		{"never escalate", ApprovalNever, ws, write, true, true, want{reject: true}},
		{"full untrusted", ApprovalUntrusted, full, write, false, true, want{ask: true}},
		{"full untrusted safe", ApprovalUntrusted, full, safe, false, true, want{}},
		{"full on-request", ApprovalOnRequest, full, write, true, true, want{}},
		{"full never", ApprovalNever, full, write, false, false, want{}},
		{"external on-failure", ApprovalOnFailure, ext, write, false, false, want{}},
		// No sandbox on the host: never silently unsandboxed.
		{"nosbx untrusted", ApprovalUntrusted, ws, write, false, false, want{ask: true}},
		{"nosbx on-request", ApprovalOnRequest, ws, write, false, false, want{ask: true}},
		{"nosbx on-failure", ApprovalOnFailure, ro, write, false, false, want{ask: true}},
		{"nosbx never", ApprovalNever, ws, write, false, false, want{reject: true}},
		{"nosbx safe", ApprovalNever, ws, safe, false, false, want{}},
		{"nosbx full never", ApprovalNever, full, write, false, false, want{}},
		{"unknown policy", ApprovalPolicy("bogus"), ws, write, false, true, want{ask: true, sandboxed: true}},
	}
	for _, c := range cases {
		d := DecideExec(ExecContext{Policy: c.policy, Sandbox: c.sandbox, Argv: c.argv, Escalate: c.escalate, SandboxAvailable: c.avail})
		got := want{ask: d.Ask, sandboxed: d.Sandboxed, reject: d.Reject != ""}
		if got != c.want {
			t.Errorf("%s: got %+v (%+v), want %+v", c.name, got, d, c.want)
		}
		if d.Ask && (len(d.AvailableDecisions) == 0 || len(d.ProposedAmendment) == 0) {
			t.Errorf("%s: ask without decisions or amendment: %+v", c.name, d)
		}
		if !d.Ask && (d.AvailableDecisions != nil || d.ProposedAmendment != nil) {
			t.Errorf("%s: decisions offered without asking: %+v", c.name, d)
		}
	}
}

func TestDecideExecMatchesReferenceRequest(t *testing.T) {
	// The shape of the request the reference server sent for an untrusted
	// one-command script (it asked for "echo", which we count as safe).
	d := DecideExec(ExecContext{Policy: ApprovalUntrusted, Sandbox: WorkspaceWrite(),
		Argv: bashLC("make hello-from-shell"), SandboxAvailable: true})
	if !d.Ask || d.Reason != "" {
		t.Fatalf("decision %+v", d)
	}
	if want := []string{"make", "hello-from-shell"}; !reflect.DeepEqual(d.ProposedAmendment, want) {
		t.Errorf("amendment %q, want %q", d.ProposedAmendment, want)
	}
	if want := []string{"accept", "acceptWithExecpolicyAmendment", "cancel"}; !reflect.DeepEqual(d.AvailableDecisions, want) {
		t.Errorf("decisions %q, want %q", d.AvailableDecisions, want)
	}
	d = DecideExec(ExecContext{Policy: ApprovalOnRequest, Sandbox: WorkspaceWrite(), Argv: bashLC("touch x"), SandboxAvailable: false})
	if !d.Ask || !strings.Contains(d.Reason, "cannot sandbox") || d.Sandboxed {
		t.Errorf("no-sandbox decision %+v", d)
	}
}

func TestDecideExecSessionApprovals(t *testing.T) {
	s := NewSessionApprovals()
	argv := bashLC("make test")
	ctx := ExecContext{Policy: ApprovalUntrusted, Sandbox: WorkspaceWrite(), Argv: argv, Approved: s, SandboxAvailable: true}
	if !DecideExec(ctx).Ask {
		t.Fatal("asks before approval")
	}
	s.ApproveCommand(argv)
	if d := DecideExec(ctx); d.Ask || !d.Sandboxed {
		t.Fatalf("after acceptForSession: %+v", d)
	}
	other := ctx
	other.Argv = bashLC("make lint")
	if !DecideExec(other).Ask {
		t.Fatal("exact approval leaked to another command")
	}
	s.AddPrefix([]string{"make"})
	if DecideExec(other).Ask {
		t.Fatal("prefix approval ignored")
	}
	both := ctx
	both.Argv = bashLC("make lint && make build")
	if DecideExec(both).Ask {
		t.Fatal("every command starts with an approved prefix, yet asks")
	}
	mixed := ctx
	mixed.Argv = bashLC("make lint && rm -rf x")
	if !DecideExec(mixed).Ask {
		t.Fatal("a second command without approved prefix did not ask")
	}
	sub := ctx
	sub.Argv = bashLC("make $(rm -rf x)")
	if !DecideExec(sub).Ask {
		t.Fatal("a substitution after an approved prefix did not ask")
	}
	// Escalation under never is refused unless accepted before.
	esc := ExecContext{Policy: ApprovalNever, Sandbox: WorkspaceWrite(), Argv: argv, Escalate: true, Approved: s, SandboxAvailable: true}
	if d := DecideExec(esc); d.Reject != "" || d.Sandboxed {
		t.Fatalf("approved escalation under never: %+v", d)
	}
	// Sandbox unavailable: an accepted command runs without asking again.
	nosbx := ctx
	nosbx.SandboxAvailable = false
	if d := DecideExec(nosbx); d.Ask || d.Sandboxed {
		t.Fatalf("approved without sandbox: %+v", d)
	}
}

func TestDecideRetryAfterSandboxDenial(t *testing.T) {
	argv := bashLC("touch /etc/x")
	for _, c := range []struct {
		p          ApprovalPolicy
		sp         SandboxPolicy
		ask, retry bool
	}{
		{ApprovalUntrusted, WorkspaceWrite(), true, true},
		{ApprovalOnRequest, WorkspaceWrite(), true, true},
		{ApprovalOnFailure, ReadOnly(), true, true},
		{ApprovalNever, WorkspaceWrite(), false, false},
		{ApprovalOnFailure, FullAccess(), false, false},
	} {
		d := DecideRetryAfterSandboxDenial(ExecContext{Policy: c.p, Sandbox: c.sp, Argv: argv, SandboxAvailable: true})
		if d.Ask != c.ask || d.Retry != c.retry || d.Sandboxed {
			t.Errorf("%s/%s: %+v", c.p, c.sp.Mode, d)
		}
	}
	s := NewSessionApprovals()
	s.ApproveCommand(argv)
	d := DecideRetryAfterSandboxDenial(ExecContext{Policy: ApprovalOnFailure, Sandbox: WorkspaceWrite(), Argv: argv, Approved: s, SandboxAvailable: true})
	if d.Ask || !d.Retry {
		t.Errorf("approved command retry: %+v", d)
	}
}

func TestLikelySandboxDenial(t *testing.T) {
	if !LikelySandboxDenial(1, "touch: cannot touch '/etc/x': Permission denied\n") {
		t.Error("permission denied not recognised")
	}
	if !LikelySandboxDenial(126, "agentd sandbox: cannot apply the sandbox") {
		t.Error("helper failure not recognised")
	}
	if LikelySandboxDenial(0, "Permission denied") {
		t.Error("success taken for a denial")
	}
	if LikelySandboxDenial(2, "no such file") {
		t.Error("ordinary failure taken for a denial")
	}
	// A login shell's profile complaining at the start is not the
	// command's failure.
	noisy := "pyenv: cannot rehash: /root/.pyenv/shims isn't writable\nmktemp: Permission denied\n" + strings.Repeat("result line\n", 12) + "exit for another reason\n"
	if LikelySandboxDenial(3, noisy) {
		t.Error("profile noise at the start taken for a denial")
	}
	if !LikelySandboxDenial(1, "pyenv: Permission denied\n"+strings.Repeat("x\n", 3)+"touch: cannot touch 'a': Read-only file system\n") {
		t.Error("denial at the end not recognised")
	}
}

func TestSessionApprovalsConcurrent(t *testing.T) {
	s := NewSessionApprovals()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				s.AddPrefix([]string{"cmd", string(rune('a' + i))})
				s.ApproveCommand([]string{"x", string(rune(j))})
				s.ApproveRoot("/r")
				_ = s.CommandApproved([]string{"cmd", "b", "c"})
				_ = s.PathsApproved([]string{"/r/x"})
			}
		})
	}
	wg.Wait()
	if !s.CommandApproved([]string{"cmd", "h", "z"}) || !s.PathsApproved([]string{"/r/a/b"}) {
		t.Fatal("approvals lost under concurrency")
	}
	var nilStore *SessionApprovals
	if nilStore.CommandApproved([]string{"ls"}) || nilStore.PathsApproved([]string{"/"}) {
		t.Fatal("nil store approves")
	}
}
