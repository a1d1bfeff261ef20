package refschema_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/schema/refschema"
)

// TestTranscriptsValidate checks every message the reference server sent in
// the recorded transcripts against the reference schema; the only ones
// allowed to be missing from the schema are the raw-event notifications.
func TestTranscriptsValidate(t *testing.T) {
	v := refschema.Validator(t)
	notInSchema := map[string]int{}
	checked := 0
	for _, m := range refschema.Transcripts(t) {
		if !m.FromServer || m.Error != nil || (m.Response && m.Method == "") {
			continue
		}
		var err error
		if m.Response {
			err = v.ValidateResponse(m.Method, m.Result)
		} else {
			err = v.ValidateServerMessage(m.Raw)
		}
		switch {
		case errors.Is(err, refschema.ErrNotInSchema):
			notInSchema[m.Method]++
		case err != nil:
			t.Errorf("%s:%d %s: %v", m.File, m.Line, m.Method, err)
		default:
			checked++
		}
	}
	t.Logf("validated %d messages; not in the reference schema: %v", checked, notInSchema)
	var missing []string
	for m := range notInSchema {
		missing = append(missing, m)
	}
	slices.Sort(missing)
	if want := []string{"rawResponse/completed", "rawResponseItem/completed"}; !slices.Equal(missing, want) {
		t.Errorf("methods missing from the schema = %v, want %v", missing, want)
	}
	if checked < 500 {
		t.Errorf("only %d messages validated", checked)
	}
}

func TestValidatorRejects(t *testing.T) {
	v := refschema.Validator(t)
	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"item without id", func() error {
			return v.ValidateNotification("item/completed", []byte(`{"method":"item/completed","emittedAtMs":1,"params":{"item":{"type":"plan","text":"x"},"threadId":"t","turnId":"u","completedAtMs":1}}`))
		}, "id"},
		{"no emittedAtMs", func() error {
			return v.ValidateServerMessage([]byte(`{"method":"thread/archived","params":{"threadId":"t"}}`))
		}, "emittedAtMs"},
		{"status with wrong tag", func() error {
			return v.ValidateServerMessage([]byte(`{"method":"thread/status/changed","emittedAtMs":1,"params":{"threadId":"t","status":{"type":"busy"}}}`))
		}, "status"},
		{"request without params", func() error {
			return v.ValidateServerMessage([]byte(`{"id":0,"method":"item/fileChange/requestApproval"}`))
		}, "params"},
		{"result missing key", func() error {
			return v.ValidateResponse("thread/unsubscribe", []byte(`{}`))
		}, "status"},
		{"client response bad decision", func() error {
			return v.ValidateClientResponse("item/fileChange/requestApproval", []byte(`{"decision":"maybe"}`))
		}, "decision"},
		{"unknown method", func() error {
			return v.ValidateNotification("foo/bar", []byte(`{"method":"foo/bar","emittedAtMs":1}`))
		}, "not in the reference schema"},
	}
	for _, c := range cases {
		err := c.err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error = %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

func BenchmarkValidateNotification(b *testing.B) {
	v := refschema.Validator(b)
	msg := []byte(`{"method":"item/completed","params":{"item":{"type":"agentMessage","moderation":null,"id":"msg_1","text":"Hello.","phase":null,"memoryCitation":null,"delivery":null,"questions":null,"startedAtMs":1,"completedAtMs":2},"threadId":"t","turnId":"u","contentTokenCount":null,"completedAtMs":2},"emittedAtMs":3}`)
	if err := v.ValidateServerMessage(msg); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := v.ValidateServerMessage(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateDelta(b *testing.B) {
	v := refschema.Validator(b)
	msg := []byte(`{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","itemId":"i","delta":"he"},"emittedAtMs":3}`)
	for b.Loop() {
		if err := v.ValidateServerMessage(msg); err != nil {
			b.Fatal(err)
		}
	}
}
