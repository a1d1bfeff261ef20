package rollout

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentd-dev/agentd/core"
)

func TestItemRoundTripV1(t *testing.T) {
	for _, it := range allItems() {
		switch it.(type) {
		case core.WebSearchItem, core.ImageViewItem, core.ImageGenerationItem,
			core.McpToolCallItem, core.EnteredReviewModeItem, core.ExitedReviewModeItem:
			continue // format 1 was replaced before agentd had these items
		}
		b, err := MarshalItem(it)
		if err != nil {
			t.Fatalf("%T: %v", it, err)
		}
		got, err := unmarshalItemV1(b)
		if err != nil {
			t.Fatalf("%T: %v (%s)", it, err, b)
		}
		if diff := cmp.Diff(it, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%T round trip (-want +got):\n%s\n%s", it, diff, b)
		}
	}
}

func TestUnknownItemAndEventTypes(t *testing.T) {
	if _, err := unmarshalItemV1([]byte(`{"type":"hologram","id":"x"}`)); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("unknown item: %v", err)
	}
	for _, ev := range []string{`{"type":"futureThing","x":1}`, `{"type":"world_state_changed"}`,
		`{"type":"item_completed","thread_id":"t","turn_id":"u","item":{"type":"Hologram","id":"h"}}`,
		`{"type":"token_count","info":null,"rate_limits":{"limit_id":"codex"}}`} {
		if _, err := decodeEvent([]byte(ev)); !errors.Is(err, ErrUnknownType) {
			t.Errorf("%s: %v", ev, err)
		}
	}
	if _, err := decodeEvent([]byte(`{"x":1}`)); err == nil || errors.Is(err, ErrUnknownType) {
		t.Fatalf("untyped event: %v", err)
	}
}

func TestParseLineFastAndSlowAgree(t *testing.T) {
	at := time.Date(2026, 11, 29, 23, 1, 17, 115_000_000, time.UTC)
	for _, turnID := range []string{"", "turn-1", `we"ird\id`} {
		b := appendLine(nil, at, LineEventMsg, turnID, []byte(`{"type":"x","s":"}{\\\"]","a":[{}]}`))
		b = b[:len(b)-1]
		got, err := parseLine(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		var want struct {
			Timestamp, Type, TurnID string
			Payload                 json.RawMessage
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if string(got.Timestamp) != "2026-11-29T23:01:17.115Z" || got.Type != want.Type || got.TurnID != want.TurnID ||
			string(got.Payload) != string(want.Payload) {
			t.Errorf("parseLine(%s) = %+v, want %+v", b, got, want)
		}
	}
	// Another writer's field order takes the slow path, and so do the
	// reference's records: an ordinal before the type, metadata after the
	// payload.
	for _, l := range []string{
		`{"type":"thread_name","payload":{"name":"n"},"timestamp":"2026-01-01T00:00:00.000Z"}`,
		`{"timestamp":"2026-01-01T00:00:00.000Z","ordinal":7,"type":"thread_name","payload":{"name":"n"}}`,
		`{"timestamp":"2026-01-01T00:00:00.000Z","type":"thread_name","payload":{"name":"n"},"metadata":{"history_sequence":3}}`,
	} {
		got, err := parseLine([]byte(l), nil)
		if err != nil || got.Type != LineThreadName || string(got.Payload) != `{"name":"n"}` {
			t.Errorf("slow path %s: %+v %v", l, got, err)
		}
		if typ, ok := peekLineType([]byte(l)); l[2] == 't' && l[3] == 'i' && (!ok || typ != LineThreadName) {
			t.Errorf("peekLineType(%s) = %q, %v", l, typ, ok)
		}
	}
}

func TestCapOutputKeepsHeadAndTail(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("HEAD")
	for i := 0; sb.Len() < 200_000; i++ {
		sb.WriteString("é line " + string(rune('a'+i%26)) + "\n")
	}
	sb.WriteString("TAIL")
	big := sb.String()
	it := capItem(core.CommandExecutionItem{ID: "c", AggregatedOutput: &big}, 64<<10).(core.CommandExecutionItem)
	out := *it.AggregatedOutput
	if len(out) > 64<<10+200 || len(out) < 64<<10-10 {
		t.Fatalf("capped length %d", len(out))
	}
	if out[:4] != "HEAD" || out[len(out)-4:] != "TAIL" {
		t.Fatalf("head or tail lost")
	}
	if !utf8.ValidString(out) {
		t.Fatalf("cut inside a rune")
	}
	if !strings.Contains(out, "bytes of output omitted") {
		t.Fatalf("no note of the omission")
	}
	small := "short"
	if got := capItem(core.CommandExecutionItem{AggregatedOutput: &small}, 64<<10).(core.CommandExecutionItem); *got.AggregatedOutput != small {
		t.Fatalf("small output changed")
	}
}
