package test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
)

// These benchmarks give the per-delta cost of the outbound path after the
// core (BenchmarkCoreDelta in core/): the projection of an
// AgentMessageDelta event into its notification (once per thread), and
// the notification's JSON encoding (once per subscribed connection: the
// server encodes per connection). The writes to the transport are in
// server/'s BenchmarkNotifyStdio and BenchmarkBroadcastWS50.

const (
	benchThreadID = "01a2298a-ff51-7b13-b9bc-6df6bfc473c6"
	benchTurnID   = "01a2298b-0088-7592-8d33-9f653f5de000"
)

// projectionInTurn returns a thread projection with a turn running and
// agent message msg_1 started, as it is while deltas stream.
func projectionInTurn(b *testing.B) *projection.Thread {
	p := projection.NewThread(benchThreadID, protocol.StatusIdle())
	now := time.Now()
	for i, msg := range []core.EventMsg{
		core.TurnStarted{Kind: core.TurnRegular, StartedAt: now},
		core.ItemStarted{Item: core.AgentMessageItem{ID: "msg_1"}},
	} {
		if out := p.Apply(core.Event{Seq: uint64(i + 1), TurnID: benchTurnID, Time: now, Msg: msg}); len(out) == 0 {
			b.Fatalf("%T projected to nothing", msg)
		}
	}
	return p
}

func deltaEvent(seq uint64, now time.Time) core.Event {
	return core.Event{Seq: seq, TurnID: benchTurnID, Time: now, Msg: core.AgentMessageDelta{ItemID: "msg_1", Delta: "hello, "}}
}

// BenchmarkProjectDelta: projection.Thread.Apply on one agent message
// delta. The event is made once, so that its boxing (the core's, counted
// in BenchmarkCoreDelta) is not counted again.
func BenchmarkProjectDelta(b *testing.B) {
	p := projectionInTurn(b)
	ev := deltaEvent(3, time.Now())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := p.Apply(ev)
		if len(out) != 1 || out[0].Method != "item/agentMessage/delta" {
			b.Fatalf("projected to %+v", out)
		}
	}
}

// notificationEncoder encodes a notification the way server/wire.go's
// encodeNotification does (unexported there): a reused json.Encoder
// without HTML escaping, method and emittedAtMs around the params, and the
// result copied out of the reused buffer.
type notificationEncoder struct {
	b   bytes.Buffer
	enc *json.Encoder
}

func newNotificationEncoder() *notificationEncoder {
	e := &notificationEncoder{}
	e.enc = json.NewEncoder(&e.b)
	e.enc.SetEscapeHTML(false)
	return e
}

func (e *notificationEncoder) encode(method string, params any, emittedAtMs int64) ([]byte, error) {
	e.b.Reset()
	e.b.WriteString(`{"method":"`)
	e.b.WriteString(method)
	e.b.WriteString(`","params":`)
	if err := e.enc.Encode(params); err != nil {
		return nil, err
	}
	e.b.Truncate(e.b.Len() - 1)
	e.b.WriteString(`,"emittedAtMs":`)
	e.b.Write(strconv.AppendInt(e.b.AvailableBuffer(), emittedAtMs, 10))
	e.b.WriteByte('}')
	return bytes.Clone(e.b.Bytes()), nil
}

// BenchmarkEncodeDelta: the JSON of one item/agentMessage/delta
// notification, as the server makes it for each subscriber.
func BenchmarkEncodeDelta(b *testing.B) {
	out := projectionInTurn(b).Apply(deltaEvent(3, time.Now()))
	e := newNotificationEncoder()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.encode(out[0].Method, out[0].Params, 1795993305301); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProjectEncodeDelta: both, for one subscriber, with a new event
// each time as the core makes them; the JSON is checked once.
func BenchmarkProjectEncodeDelta(b *testing.B) {
	p := projectionInTurn(b)
	e := newNotificationEncoder()
	now := time.Now()
	data, err := e.encode("item/agentMessage/delta", p.Apply(deltaEvent(3, now))[0].Params, 1)
	if err != nil {
		b.Fatal(err)
	}
	want := `{"method":"item/agentMessage/delta","params":{"threadId":"` + benchThreadID + `","turnId":"` + benchTurnID + `","itemId":"msg_1","delta":"hello, "},"emittedAtMs":1}`
	if string(data) != want {
		b.Fatalf("encoded\n%s\nwant\n%s", data, want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := p.Apply(deltaEvent(uint64(i+4), now))
		if _, err := e.encode(out[0].Method, out[0].Params, now.UnixMilli()); err != nil {
			b.Fatal(err)
		}
	}
}
