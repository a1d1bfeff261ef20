//go:build !linux

package policy

// detect finds nothing: the sandbox is Linux only.
func detect() Capabilities { return Capabilities{} }
