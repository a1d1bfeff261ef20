package proc

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestThisProcess(t *testing.T) {
	pid := os.Getpid()
	if !Alive(pid) {
		t.Error("this process is not seen running")
	}
	// Burn some CPU so that a tick is counted.
	deadline := time.Now().Add(50 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	if cpu, err := CPU(pid); err != nil || cpu <= 0 {
		t.Errorf("CPU = %v, %v", cpu, err)
	}
	rss, err := StatusBytes(pid, "VmRSS")
	if err != nil || rss < 1<<20 {
		t.Errorf("VmRSS = %d, %v", rss, err)
	}
	if _, err := StatusBytes(pid, "NoSuchField"); err == nil {
		t.Error("no error for a field /proc does not have")
	}
}

// A child that exited and is not reaped yet is a zombie: not alive. Once
// reaped it is gone.
func TestZombieIsNotAlive(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := stat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if f[0] == "Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child is still %s", f[0])
		}
		time.Sleep(time.Millisecond)
	}
	if Alive(pid) {
		t.Error("a zombie is seen running")
	}
	_ = cmd.Wait()
	if Alive(pid) {
		t.Error("a reaped child is seen running")
	}
	if _, err := CPU(pid); err == nil {
		t.Error("no error for a process that is gone")
	}
}
