package utility

import (
	"fmt"
	"os"
	osexec "os/exec"
	"testing"
)

func TestOSErrorText(t *testing.T) {
	_, err := os.ReadFile("/nonexistent/agentd/file")
	if got := osErrorText(err); got != "No such file or directory (os error 2)" {
		t.Errorf("ENOENT: %q", got)
	}
	if got := osErrorText(fmt.Errorf("start: %w", osexec.ErrNotFound)); got != "No such file or directory (os error 2)" {
		t.Errorf("not on PATH: %q", got)
	}
	if got := osErrorText(fmt.Errorf("plain")); got != "plain" {
		t.Errorf("plain: %q", got)
	}
}
