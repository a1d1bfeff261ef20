package test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/agentd-dev/agentd/schema/refschema"
)

// Shared helpers of the utility tests (command/exec, fs/*, fuzzyFileSearch,
// config writes).

// utilClient starts a daemon over stdio and initializes a client.
func utilClient(t *testing.T, o Options) (*Daemon, *Client) {
	t.Helper()
	d := Start(t, o)
	c := d.Stdio()
	c.Initialize("utility-test", nil)
	return d, c
}

// validResult checks that m is a result valid for method against the
// reference schema, and decodes it into out (when not nil).
func validResult(t *testing.T, method string, m Message, out any) json.RawMessage {
	t.Helper()
	res := WantResult(t, m)
	if err := refschema.Validator(t).ValidateResponse(method, res); err != nil {
		t.Fatalf("%s result %s does not match the reference schema: %v", method, res, err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("%s result %s: %v", method, res, err)
		}
	}
	return res
}

// validNotification checks m against the reference schema.
func validNotification(t *testing.T, m Message) {
	t.Helper()
	if err := refschema.Validator(t).ValidateNotification(m.Method, m.Raw); err != nil {
		t.Fatalf("%s does not match the reference schema: %v\n%s", m.Method, err, m.Raw)
	}
}

// wantErrorData checks an error's data member.
func wantErrorData(t *testing.T, m Message, want string) {
	t.Helper()
	if m.Error == nil || string(m.Error.Data) != want {
		t.Fatalf("want error data %s, got %s", want, m.Raw)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func unb64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("bad base64 %q: %v", s, err)
	}
	return string(b)
}
