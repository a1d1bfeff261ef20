package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
)

// FuzzDecodeParams feeds arbitrary params to every client request: no input
// may panic, accepted input must be valid JSON (or blank: absent params),
// and ExperimentalUse must cope with whatever it gets.
func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"t","input":[{"type":"text","text":"hi","text_elements":[]}],"approvalPolicy":{"granular":{"rules":true}}}`,
		`{"cwd":"/w","dynamicTools":[{"type":"namespace","name":"n","description":"d","tools":[{"type":"function"}]}]}`,
		`{"threadId":"t","cursor":{"type":"item","itemId":"i"},"deferOutput":{"mcpToolCall":true}}`,
		`{"command":["ls"],"env":{"A":null},"size":{"rows":1,"cols":2},"sandboxPolicy":{"type":"externalSandbox"}}`,
		`{"path":"/a\u00e9\"b","limit":1e3,"x":[[[{}]]]}`,
		`null`, ``, `[`, `{"a":`, `"\ud800"`,
	} {
		for i := range len(protocol.Methods(protocol.ClientRequest)) {
			f.Add(i, s)
		}
	}
	methods := protocol.Methods(protocol.ClientRequest)
	f.Fuzz(func(t *testing.T, i int, raw string) {
		m := methods[(i%len(methods)+len(methods))%len(methods)]
		v, err := protocol.DecodeParams(m, json.RawMessage(raw))
		if err == nil && m.Params != nil && strings.TrimSpace(raw) != "" && !json.Valid([]byte(raw)) {
			t.Errorf("%s accepted invalid JSON %q as %#v", m.Method, raw, v)
		}
		_ = protocol.ExperimentalUse(m, json.RawMessage(raw))
	})
}
