//go:build linux && !amd64 && !arm64

package policy

// seccompArch 0: we have no filter for this architecture, so the network
// cannot be blocked by the Landlock method here.
const seccompArch = 0

const x32SyscallBit = 0
