package test

import (
	"fmt"
	"testing"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// A connection's requests about one thread are answered in the order it
// sent them, each seeing the effect of the ones before: pipelined
// archive/unarchive pairs all succeed, and a read right behind a rename
// sees the new name. Config writes and reads keep their order too.
func TestPerThreadRequestOrder(t *testing.T) {
	m := mockmodel.New(t)
	m.Enqueue(mockmodel.Reply("resp_1", mockmodel.Text("msg_1", "hi"), mockmodel.Completed("resp_1", usage())))
	d := Start(t, Options{ConfigTOML: mockConfig(m, "")})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})
	runTurn(t, c, id, "hello")

	var ids []string
	for i := range 10 {
		ids = append(ids,
			string(c.Request("thread/archive", map[string]any{"threadId": id})),
			string(c.Request("thread/unarchive", map[string]any{"threadId": id})),
			string(c.Request("thread/name/set", map[string]any{"threadId": id, "name": fmt.Sprintf("name %d", i)})),
			string(c.Request("thread/read", map[string]any{"threadId": id})),
		)
	}
	var answers []Message
	for len(answers) < len(ids) {
		if msg := c.Next(); msg.Method == "" {
			answers = append(answers, msg)
		}
	}
	for i, a := range answers {
		if string(a.ID) != ids[i] {
			t.Fatalf("answer %d is for request %s, want %s", i, a.ID, ids[i])
		}
		if a.Error != nil {
			t.Fatalf("request %s failed: %s", ids[i], a.Raw)
		}
		if i%4 == 3 {
			if got, want := str(unmarshal(t, a.Result), "thread", "name"), fmt.Sprintf("name %d", i/4); got != want {
				t.Fatalf("read %d sees name %q, want %q", i/4, got, want)
			}
		}
	}

	var cids []string
	for i := range 10 {
		cids = append(cids,
			string(c.Request("config/value/write", map[string]any{"keyPath": "model_verbosity", "value": []string{"low", "high"}[i%2], "mergeStrategy": "replace"})),
			string(c.Request("config/read", map[string]any{"includeLayers": true})),
		)
	}
	for i := 0; i < len(cids); {
		msg := c.Next()
		if msg.Method != "" {
			continue
		}
		if string(msg.ID) != cids[i] || msg.Error != nil {
			t.Fatalf("config answer %d: %s, want the answer to %s", i, msg.Raw, cids[i])
		}
		if i%2 == 1 {
			if got, want := str(unmarshal(t, msg.Result), "layers", 0, "config", "model_verbosity"), []string{"low", "high"}[i/2%2]; got != want {
				t.Fatalf("read %d sees %q, want %q", i/2, got, want)
			}
		}
		i++
	}
}
