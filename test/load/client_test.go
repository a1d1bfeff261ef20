package main

import (
	"testing"
	"time"
)

var timeZero time.Time

func TestFastDeltaReadsPlainDeltasAndLeavesTheRest(t *testing.T) {
	d, ok := fastDelta([]byte(`{"method":"item/agentMessage/delta","params":{"threadId":"th","turnId":"tu","itemId":"it","delta":"t=1;"},"emittedAtMs":5}`))
	if !ok || d.thread != "th" || d.turn != "tu" || d.item != "it" || string(d.delta) != "t=1;" {
		t.Errorf("agentd's shape: %+v, %v", d, ok)
	}
	d, ok = fastDelta([]byte(`{"method":"item/agentMessage/delta","params":{"delta":"x","itemId":"it","turnId":"tu","threadId":"th"}}`))
	if !ok || d.thread != "th" || string(d.delta) != "x" {
		t.Errorf("members in another order: %+v, %v", d, ok)
	}
	for _, msg := range []string{
		`{"method":"item/agentMessage/delta","params":{"threadId":"th","turnId":"tu","itemId":"it","delta":"a \"quoted\" word"}}`,
		`{"method":"item/agentMessage/delta","params":{"threadId":"th","turnId":"tu","itemId":"it"}}`,
		`{"method":"item/agentMessage/delta","params":{"threadId":"th","turnId":"tu","itemId":"it","delta":"x","n":1}}`,
		`{"method":"item/agentMessage/delta","params":{"threadId":"th","turnId":"tu","itemId":"it","delta":"x","extra":"y"}}`,
		`{"method":"item/reasoning/textDelta","params":{"threadId":"th","turnId":"tu","itemId":"it","delta":"x"}}`,
		`{"params":{"threadId":"th","turnId":"tu","itemId":"it","delta":"x"},"method":"item/agentMessage/delta"}`,
		`{"method":"item/agentMessage/delta","params":{"threadId":"th","turnId":"tu","itemId":"it","delta":"x`,
	} {
		if d, ok := fastDelta([]byte(msg)); ok {
			t.Errorf("fastDelta(%s) = %+v: want it left to the full decoder", msg, d)
		}
	}
}

// A delta the fast path leaves is still checked: handle decodes it.
func TestHandleDecodesADeltaTheFastPathLeaves(t *testing.T) {
	c := &client{name: "c", check: NewChecker("c"), pending: map[int64]chan reply{}}
	c.handle([]byte(`{"method":"turn/started","params":{"threadId":"th","turn":{"id":"tu"}}}`), timeZero)
	c.handle([]byte(`{"method":"item/started","params":{"threadId":"th","turnId":"tu","item":{"id":"it","type":"agentMessage"}}}`), timeZero)
	c.handle([]byte(`{"method":"item/agentMessage/delta","params":{"threadId":"th","turnId":"tu","itemId":"it","delta":"say \"hi\""}}`), timeZero)
	c.handle([]byte(`{"method":"item/agentMessage/delta","params":{"threadId":"th","turnId":"tu","itemId":"it","delta":"!"}}`), timeZero)
	c.handle([]byte(`{"method":"item/completed","params":{"threadId":"th","turnId":"tu","item":{"id":"it","type":"agentMessage","text":"say \"hi\"!"}}}`), timeZero)
	c.handle([]byte(`{"method":"turn/completed","params":{"threadId":"th","turn":{"id":"tu"}}}`), timeZero)
	c.check.Finish()
	if errs := c.check.Errors(); len(errs) != 0 || c.bad != nil {
		t.Errorf("violations %q, malformed %v", errs, c.bad)
	}
	if c.deltas.Load() != 2 || c.completed.Load() != 1 {
		t.Errorf("%d deltas, %d turns completed counted", c.deltas.Load(), c.completed.Load())
	}
}
