//go:build !linux

package policy

// SandboxMain refuses to run anything: the sandbox is Linux only, and a
// command must never run unconfined in its name.
func SandboxMain(args []string) int {
	return helperFail(HelperSetupFailed, "sandboxing is not supported on this system; the command was not run")
}
