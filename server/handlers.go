package server

import "os"

// TestHooksEnv enables the test-only methods (test/sleep, test/emit,
// test/call) when set to "1". Never set it in production.
const TestHooksEnv = "AGENTD_TEST_HOOKS"

// registerBuiltins is the one place where methods are registered.
// initialize is not here: the connection handles it on its read loop.
func (s *Server) registerBuiltins() {
	s.registerApp()
	if os.Getenv(TestHooksEnv) == "1" {
		s.registerTestHooks()
	}
}
