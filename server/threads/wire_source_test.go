package threads

import (
	"encoding/json"
	"testing"
)

func TestWireSourceOfStoredThreads(t *testing.T) {
	for kind, want := range map[string]string{
		"":                    `"vscode"`,
		"cli":                 `"cli"`,
		"exec":                `"exec"`,
		"appServer":           `"appServer"`,
		"subAgentReview":      `{"subAgent":"review"}`,
		"subAgentThreadSpawn": `{"subAgent":{"other":"thread_spawn"}}`,
	} {
		b, err := json.Marshal(wireSource(kind))
		if err != nil || string(b) != want {
			t.Errorf("%q: %s %v, want %s", kind, b, err, want)
		}
	}
}
