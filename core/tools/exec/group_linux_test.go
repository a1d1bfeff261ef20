//go:build linux

package exec

import (
	osexec "os/exec"
	"syscall"
	"testing"
)

// A member is recognised by its pid and start time: once it is gone, or
// when the start time differs (a reused pid), it is not in the group.
func TestGroupMembers(t *testing.T) {
	cmd := osexec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	members := groupMembers(pid)
	if len(members) != 1 || members[0].pid != pid || !members[0].stillIn(pid) {
		t.Fatalf("members %v", members)
	}
	if members[0].stillIn(pid + 1) {
		t.Fatal("in another group")
	}
	forged := member{pid: pid, start: members[0].start + 1}
	if forged.stillIn(pid) {
		t.Fatal("a reused pid (another start time) taken for the member")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if members[0].stillIn(pid) || anyStillIn(members, pid) {
		t.Fatal("a dead member still counts")
	}
}
