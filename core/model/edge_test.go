package model_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentd-dev/agentd/core/model"
)

// rawServer answers every request with body as an event stream, byte for
// byte, for framing the mock does not produce.
func rawServer(t *testing.T, body string) model.Provider {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(hs.Close)
	return model.Provider{ID: "raw", BaseURL: hs.URL + "/v1/"}
}

func TestStreamFraming(t *testing.T) {
	body := ": a comment line\r\n\r\n" +
		"event: response.created\r\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\r\n\r\n" +
		"retry: 1000\n\n" +
		// A data field split over two lines is one event.
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\ndata: \"item_id\":\"m\",\"delta\":\"caf\\u00e9 \\ud83d\\ude00\\n\"}\n\n" +
		"event: keepalive\ndata: \n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"delta\":\"x\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"usage\":null}}\n\n" +
		"data: [DONE]\n\n"
	st, err := model.NewClient(rawServer(t, body)).Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	want := []flat{
		{Kind: model.EventCreated, ResponseID: "r1"},
		{Kind: model.EventOutputTextDelta, ItemID: "m", Delta: "café 😀\n"},
		{Kind: model.EventOutputTextDelta, ItemID: "m", Delta: "x"},
		{Kind: model.EventCompleted, ResponseID: "r1"},
	}
	if diff := cmp.Diff(want, flatten(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if evs[3].Usage != nil {
		t.Errorf("usage = %+v for a null usage", evs[3].Usage)
	}
}

func TestStreamMalformedEvents(t *testing.T) {
	const created = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\n\n"
	cases := map[string]string{
		"delta":         "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"x}\n\n",
		"item":          "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"id\":\"no type\"}}\n\n",
		"usage":         "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":\"many\"}}}\n\n",
		"response":      "event: response.created\ndata: {\"type\":\"response.created\",\"response\":[1]}\n\n",
		"failed error":  "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":[]}}\n\n",
		"index as text": "event: response.reasoning_summary_part.added\ndata: {\"type\":\"response.reasoning_summary_part.added\",\"summary_index\":\"0\"}\n\n",
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			st, err := model.NewClient(rawServer(t, created+bad)).Stream(context.Background(), request("hi"), meta)
			if err != nil {
				t.Fatal(err)
			}
			evs, err := drain(t, st)
			me := modelError(t, err)
			if me.Kind != model.ErrStreamDisconnected || !strings.HasPrefix(me.Message, "malformed ") {
				t.Errorf("got %v %q, want a malformed-event disconnect", me.Kind, me.Message)
			}
			if len(evs) != 1 {
				t.Errorf("%d events before the error, want 1", len(evs))
			}
		})
	}
}

// Garbage in an event the client ignores anyway does not end the stream.
func TestStreamIgnoresMalformedDroppedEvents(t *testing.T) {
	body := "event: response.in_progress\ndata: {not json\n\n" +
		"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\"}}\n\n"
	st, err := model.NewClient(rawServer(t, body)).Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := drain(t, st)
	if err != nil || len(evs) != 2 {
		t.Errorf("got %d events, %v; want 2, nil", len(evs), err)
	}
}

func TestStreamNestedErrorEvent(t *testing.T) {
	body := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\",\"message\":\"too big\"}}\n\n"
	st, err := model.NewClient(rawServer(t, body)).Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	_, err = drain(t, st)
	if me := modelError(t, err); me.Kind != model.ErrContextWindowExceeded || me.Message != "too big" {
		t.Errorf("got %v %q", me.Kind, me.Message)
	}
}

func TestStreamEventTooLarge(t *testing.T) {
	body := "event: response.output_text.delta\ndata: {\"delta\":\"" + strings.Repeat("x", 17<<20) + "\"}\n\n"
	st, err := model.NewClient(rawServer(t, body)).Stream(context.Background(), request("hi"), meta)
	if err != nil {
		t.Fatal(err)
	}
	_, err = drain(t, st)
	if me := modelError(t, err); me.Kind != model.ErrStreamDisconnected || me.Message != "an SSE event exceeds 16 MiB" {
		t.Errorf("got %v %q", me.Kind, me.Message)
	}
}
