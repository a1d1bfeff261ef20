package mockmodel_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/test/mockmodel"
)

// recorder captures the failures the server reports instead of failing the
// test, so the checks themselves can be tested.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func post(t *testing.T, s *mockmodel.Server, body string) (*http.Response, string) {
	t.Helper()
	resp, err := s.HTTPClient().Post(s.URL()+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// events parses an SSE body into (type, data) pairs.
func events(t *testing.T, body string) []mockmodel.Event {
	t.Helper()
	var out []mockmodel.Event
	for _, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		var e mockmodel.Event
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				e.Type = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e.Data); err != nil {
					t.Fatalf("bad data line %q: %v", line, err)
				}
			}
		}
		out = append(out, e)
	}
	return out
}

func TestReplyStreamsScriptedEventsInOrder(t *testing.T) {
	s := mockmodel.New(t)
	s.Enqueue(
		mockmodel.Reply("resp_1", mockmodel.Reasoning("rs_1", []string{"plan it"}, ""), mockmodel.Text("msg_1", "hello big world")),
		mockmodel.Reply("resp_2", mockmodel.TextN("msg_2", "abcdefg", 3)),
	)
	resp, body := post(t, s, `{"model":"m","input":[]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := events(t, body)
	var types, deltas []string
	for i, e := range evs {
		types = append(types, e.Type)
		if e.Data["type"] != e.Type || e.Data["sequence_number"] != float64(i) {
			t.Errorf("event %d: type %v, sequence_number %v", i, e.Data["type"], e.Data["sequence_number"])
		}
		if e.Type == "response.output_text.delta" {
			deltas = append(deltas, e.Data["delta"].(string))
			if e.Data["output_index"] != 1.0 {
				t.Errorf("text delta output_index = %v, want 1", e.Data["output_index"])
			}
		}
	}
	want := "response.created response.output_item.added response.reasoning_summary_part.added " +
		"response.reasoning_summary_text.delta response.reasoning_summary_text.delta response.reasoning_summary_part.done " +
		"response.output_item.done response.output_item.added response.output_text.delta response.output_text.delta " +
		"response.output_text.delta response.output_item.done response.completed"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("types:\n got %s\nwant %s", got, want)
	}
	if got := strings.Join(deltas, "|"); got != "hello |big |world" {
		t.Errorf("deltas = %q", got)
	}
	output := evs[len(evs)-1].Data["response"].(map[string]any)["output"].([]any)
	if len(output) != 2 || output[1].(map[string]any)["id"] != "msg_1" {
		t.Errorf("completed output = %v", output)
	}

	_, body = post(t, s, `{"model":"m","input":[]}`)
	deltas = nil
	for _, e := range events(t, body) {
		if e.Type == "response.output_text.delta" {
			deltas = append(deltas, e.Data["delta"].(string))
		}
	}
	if got := strings.Join(deltas, "|"); got != "abc|de|fg" {
		t.Errorf("TextN deltas = %q", got)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests recorded", n)
	}
}

func TestDataOnlyOmitsEventLines(t *testing.T) {
	s := mockmodel.New(t)
	s.Enqueue(mockmodel.Reply("resp_1").DataOnly())
	_, body := post(t, s, `{}`)
	if strings.Contains(body, "event:") || !strings.Contains(body, `"type":"response.created"`) {
		t.Errorf("body = %q", body)
	}
}

func TestStatusResponseAndHeaders(t *testing.T) {
	s := mockmodel.New(t)
	s.Enqueue(mockmodel.Status(429, `{"error":{"message":"slow"}}`).WithHeader("Retry-After", "2"))
	resp, body := post(t, s, `{}`)
	if resp.StatusCode != 429 || body != `{"error":{"message":"slow"}}` || resp.Header.Get("Retry-After") != "2" ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("got %d %q %v", resp.StatusCode, body, resp.Header)
	}
}

func TestRequestsAreRecorded(t *testing.T) {
	s := mockmodel.New(t)
	s.Enqueue(mockmodel.Reply("resp_1"))
	body := `{"model":"gpt-test","tools":[{"type":"function","name":"exec_command"},{"type":"web_search"}],"input":[
		{"type":"message","role":"user","content":[{"type":"input_text","text":"first"}]},
		{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"done"},
		{"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"p"},
		{"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"ok"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"sec"},{"type":"input_text","text":"ond"}]}]}`
	req, _ := http.NewRequest("POST", s.URL()+"/responses?api-version=1", strings.NewReader(body))
	req.Header.Set("Thread-Id", "thr")
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := s.Requests()[0]
	if r.Model() != "gpt-test" || r.LastUserText() != "second" || r.Header.Get("thread-id") != "thr" ||
		r.Query.Get("api-version") != "1" || r.Path != "/v1/responses" {
		t.Errorf("recorded %+v", r)
	}
	if out, ok := r.ToolOutput("c1"); !ok || out != "done" {
		t.Errorf("ToolOutput(c1) = %q, %v", out, ok)
	}
	if out, ok := r.ToolOutput("c2"); !ok || out != `[{"text":"ok","type":"input_text"}]` {
		t.Errorf("ToolOutput(c2) = %q, %v", out, ok)
	}
	if got := strings.Join(r.ToolNames(), ","); got != "exec_command,web_search" {
		t.Errorf("ToolNames = %s", got)
	}
}

func TestOrphanToolCallsFailTheTest(t *testing.T) {
	rec := &recorder{TB: t}
	s := mockmodel.New(rec)
	s.Enqueue(mockmodel.Reply("r1"), mockmodel.Reply("r2"))
	post(t, s, `{"input":[{"type":"function_call_output","call_id":"lost","output":"x"},
		{"type":"custom_tool_call","call_id":"open","name":"apply_patch","input":""}]}`)
	post(t, s, `{"input":[{"type":"function_call","call_id":"a","name":"n","arguments":"{}"},
		{"type":"function_call_output","call_id":"a","output":"x"}]}`)
	want := []string{
		`mockmodel: request 0: custom_tool_call with call_id "open" has no output`,
		`mockmodel: request 0: function_call_output for call_id "lost" has no matching call`,
	}
	if got := rec.errors(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reported:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestUnscriptedRequestFailsTheTest(t *testing.T) {
	rec := &recorder{TB: t}
	s := mockmodel.New(rec)
	s.Enqueue(mockmodel.Reply("r1"))
	post(t, s, `{}`)
	resp, _ := post(t, s, `{}`)
	if resp.StatusCode != 400 {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
	if got := rec.errors(); len(got) != 1 || got[0] != "mockmodel: request 1 arrived but only 1 response(s) were scripted" {
		t.Errorf("reported %q", got)
	}
}

func TestUnusedResponsesFailTheTest(t *testing.T) {
	rec := &recorder{TB: t}
	s := mockmodel.New(rec)
	s.Enqueue(mockmodel.Reply("r1"), mockmodel.Reply("r2"))
	post(t, s, `{}`)
	s.Close()
	if got := rec.errors(); len(got) != 1 || got[0] != "mockmodel: 1 scripted response(s) were never requested" {
		t.Errorf("reported %q", got)
	}

	rec2 := &recorder{TB: t}
	s2 := mockmodel.New(rec2, mockmodel.AllowUnused())
	s2.Enqueue(mockmodel.Reply("r1"))
	s2.Close()
	if got := rec2.errors(); len(got) != 0 {
		t.Errorf("reported %q with AllowUnused", got)
	}
}

func TestUnexpectedPathFailsTheTest(t *testing.T) {
	rec := &recorder{TB: t}
	s := mockmodel.New(rec)
	resp, err := s.HTTPClient().Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /models: %d", resp.StatusCode)
	}
	resp, err = s.HTTPClient().Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := rec.errors(); resp.StatusCode != 404 || len(got) != 1 || !strings.Contains(got[0], "unexpected request POST /v1/chat/completions") {
		t.Errorf("status %d, reported %q", resp.StatusCode, got)
	}
}

func TestCutAfterDropsTheConnectionMidEvent(t *testing.T) {
	s := mockmodel.New(t)
	s.Enqueue(mockmodel.Reply("r1", mockmodel.Text("m", "a b")).CutAfter(2))
	resp, err := s.HTTPClient().Post(s.URL()+"/responses", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Errorf("body ended cleanly; want a broken connection")
	}
	parts := strings.Split(string(b), "\n\n")
	if len(parts) != 3 || !strings.HasPrefix(parts[2], "event: response.output_text.delta\ndata: {") {
		t.Errorf("read %q, want 2 complete events and the start of a third", b)
	}
}

func TestGateHoldsTheStream(t *testing.T) {
	s := mockmodel.New(t)
	g := mockmodel.NewGate()
	s.Enqueue(mockmodel.Reply("r1", mockmodel.Text("m", "x")).GateAfter(1, g))
	resp, err := s.HTTPClient().Post(s.URL()+"/responses", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || first != "event: response.created\n" {
		t.Fatalf("first line %q, %v", first, err)
	}
	select {
	case <-g.Reached():
	case <-time.After(10 * time.Second):
		t.Fatal("gate not reached")
	}
	// Nothing passes the gate until it opens.
	more := make(chan string, 1)
	go func() {
		rest, _ := io.ReadAll(br)
		more <- string(rest)
	}()
	select {
	case got := <-more:
		t.Fatalf("read past the gate: %q", got)
	case <-time.After(100 * time.Millisecond):
	}
	g.Open()
	select {
	case rest := <-more:
		if !strings.Contains(rest, "response.completed") {
			t.Errorf("rest = %q", rest)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream did not continue after Open")
	}
}

func TestStallEndsWhenClientLeaves(t *testing.T) {
	s := mockmodel.New(t)
	s.Enqueue(mockmodel.Reply("r1").StallAfter(1))
	resp, err := s.HTTPClient().Post(s.URL()+"/responses", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-s.Disconnected(0):
	case <-time.After(10 * time.Second):
		t.Fatal("server did not notice the client leaving")
	}
}

// A client that hangs up before its request body is whole (a request it
// cancelled while sending) is not a failure, and takes no response: the
// next request gets the first scripted one.
func TestRequestCutShortIsNotAFailure(t *testing.T) {
	rec := &recorder{TB: t}
	s := mockmodel.New(rec)
	s.Enqueue(mockmodel.Reply("r1"))
	host := strings.TrimPrefix(strings.TrimSuffix(s.URL(), "/v1"), "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /v1/responses HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"input\":", host)
	c.Close()
	// The handler has ended once the server answers the next request.
	resp, body := post(t, s, `{}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"r1"`) {
		t.Errorf("next request: %d %s", resp.StatusCode, body)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests recorded, want 1", n)
	}
	s.Close() // waits for every handler, the cut request's included
	if got := rec.errors(); len(got) > 0 {
		t.Errorf("reported %q", got)
	}
}
