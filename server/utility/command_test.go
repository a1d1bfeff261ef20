package utility

import (
	"testing"

	"github.com/agentd-dev/agentd/core/tools/exec"
)

// The per-stream cap keeps the first bytes of each stream and drops the
// rest; no cap keeps everything.
func TestExecOutputCap(t *testing.T) {
	p := newExecProc(nil, nil, execSpec{outputCap: 4})
	p.onOutput(exec.StreamStdout, []byte("01"))
	p.onOutput(exec.StreamStderr, []byte("e"))
	p.onOutput(exec.StreamStdout, []byte("234"))
	p.onOutput(exec.StreamStdout, []byte("5"))
	r := p.response(&exec.Result{ExitCode: 7})
	if r.Stdout != "0123" || r.Stderr != "e" || r.ExitCode != 7 {
		t.Fatalf("got %+v", r)
	}
	if !p.out[0].capReached || p.out[1].capReached {
		t.Fatalf("capReached %v %v", p.out[0].capReached, p.out[1].capReached)
	}

	p = newExecProc(nil, nil, execSpec{outputCap: -1})
	big := make([]byte, 3<<20)
	p.onOutput(exec.StreamStdout, big)
	if r := p.response(&exec.Result{}); len(r.Stdout) != len(big) {
		t.Fatalf("uncapped output cut to %d", len(r.Stdout))
	}
}
