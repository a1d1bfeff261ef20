package rollout

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/policy"
)

// Threads as the reference (codex 0.169) writes them, written by hand for
// these tests from what its files hold: the record kinds, their members
// and their order.

// refPaginatedThread is a thread in the reference's newer layout
// (history_mode "paginated"): records carry an ordinal, history items a
// trailing metadata member and an internal member, and items are typed
// item_completed events.
const refPaginatedID = "01a1e000-0000-7000-8000-0000000000a1"

var refPaginatedThread = strings.Join([]string{
	`{"timestamp":"2026-11-30T08:00:00.010Z","ordinal":0,"type":"session_meta","payload":{"account_scoped":true,"session_id":"01a1e000-0000-7000-8000-0000000000a1","id":"01a1e000-0000-7000-8000-0000000000a1","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/src/app","runtime_workspace_roots":["/src/app"],"originator":"codex_vscode","cli_version":"0.169.0","source":"vscode","model_provider":"openai","base_instructions":{"text":"Be brief."},"history_mode":"paginated","git":{"commit_hash":"f00d","branch":"main","repository_url":"https://example.com/app.git"}}}`,
	`{"timestamp":"2026-11-30T08:00:01.000Z","ordinal":1,"type":"event_msg","payload":{"type":"task_started","turn_attribution":{"turn_id":"u-1","turn_trigger":null,"parent_turn_id":null,"root_turn_id":"u-1"},"turn_id":"u-1","root_turn_id":"u-1","started_at":1796025601,"model_context_window":200000,"collaboration_mode_kind":"default"}}`,
	`{"timestamp":"2026-11-30T08:00:01.010Z","ordinal":2,"type":"response_item","payload":{"type":"message","id":"msg_dev","role":"developer","content":[{"type":"input_text","text":"Sandbox: none."}],"internal_chat_message_metadata_passthrough":{"turn_id":"u-1"}},"metadata":{"history_sequence":1,"client_authored":false}}`,
	`{"timestamp":"2026-11-30T08:00:01.020Z","ordinal":3,"type":"world_state","payload":{"full":true,"state":{"tools":{}}}}`,
	`{"timestamp":"2026-11-30T08:00:01.030Z","ordinal":4,"type":"turn_context","payload":{"turn_id":"u-1","cwd":"/src/app","approval_policy":"never","approvals_reviewer":"user","permission_profile":{"type":"disabled"},"model":"gpt-5.5","effort":"high","summary":"none","sandbox_policy":{"type":"danger-full-access"}}}`,
	`{"timestamp":"2026-11-30T08:00:01.040Z","ordinal":5,"type":"event_msg","payload":{"type":"thread_settings_applied","thread_id":"01a1e000-0000-7000-8000-0000000000a1","thread_settings":{"model":"gpt-5.5"}}}`,
	`{"timestamp":"2026-11-30T08:00:01.050Z","ordinal":6,"type":"response_item","payload":{"type":"message","id":"msg_u1","role":"user","content":[{"type":"input_text","text":"count the files"}],"internal_chat_message_metadata_passthrough":{"turn_id":"u-1","create_time":1796025601.05}},"metadata":{"history_sequence":2}}`,
	`{"timestamp":"2026-11-30T08:00:01.060Z","ordinal":7,"type":"event_msg","payload":{"type":"item_completed","thread_id":"01a1e000-0000-7000-8000-0000000000a1","turn_id":"u-1","item":{"type":"UserMessage","id":"um-1","content":[{"type":"text","text":"count the files","text_elements":[]}]},"started_at_ms":1796025601060,"completed_at_ms":1796025601060}}`,
	`{"timestamp":"2026-11-30T08:00:02.000Z","ordinal":8,"type":"response_item","payload":{"type":"function_call","status":"completed","id":"fc_1","name":"exec_command","arguments":"{\"cmd\":\"ls | wc -l\"}","call_id":"call_1","internal_chat_message_metadata_passthrough":{"turn_id":"u-1"}},"metadata":{"history_sequence":3}}`,
	`{"timestamp":"2026-11-30T08:00:02.010Z","ordinal":9,"type":"token_usage_record","payload":{"thread_id":"01a1e000-0000-7000-8000-0000000000a1","turn_id":"u-1","response_id":"resp_1","usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}}`,
	`{"timestamp":"2026-11-30T08:00:02.500Z","ordinal":10,"type":"event_msg","payload":{"type":"item_completed","thread_id":"01a1e000-0000-7000-8000-0000000000a1","turn_id":"u-1","item":{"type":"CommandExecution","id":"call_1","process_id":"4242","command":["/bin/bash","-lc","ls | wc -l"],"cwd":"file:///src/app","parsed_cmd":[{"type":"unknown","cmd":"ls | wc -l"}],"source":"unified_exec_startup","status":"completed","aggregated_output":"3\n","exit_code":0,"duration":{"secs":0,"nanos":250000000}},"started_at_ms":1796025602250,"completed_at_ms":1796025602500}}`,
	`{"timestamp":"2026-11-30T08:00:02.510Z","ordinal":11,"type":"response_item","payload":{"type":"function_call_output","id":"fco_1","call_id":"call_1","output":"3\n","internal_chat_message_metadata_passthrough":{"turn_id":"u-1"}},"metadata":{"history_sequence":4}}`,
	`{"timestamp":"2026-11-30T08:00:02.520Z","ordinal":12,"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":15},"last_token_usage":{"input_tokens":10,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":15},"last_usage_includes_reasoning":false,"model_context_window":200000},"rate_limits":{"limit_id":"codex","primary":null}}}`,
	`{"timestamp":"2026-11-30T08:00:03.000Z","ordinal":13,"type":"event_msg","payload":{"type":"item_completed","thread_id":"01a1e000-0000-7000-8000-0000000000a1","turn_id":"u-1","item":{"type":"Reasoning","id":"rs_1","summary_text":["Counting."],"raw_content":["wc counts lines"]},"started_at_ms":1796025602900,"completed_at_ms":1796025603000}}`,
	`{"timestamp":"2026-11-30T08:00:03.100Z","ordinal":14,"type":"event_msg","payload":{"type":"item_completed","thread_id":"01a1e000-0000-7000-8000-0000000000a1","turn_id":"u-1","item":{"type":"AgentMessage","id":"msg_a1","content":[{"type":"Text","text":"There are "},{"type":"Text","text":"3 files."}]},"started_at_ms":1796025603050,"completed_at_ms":1796025603100}}`,
	`{"timestamp":"2026-11-30T08:00:03.110Z","ordinal":15,"type":"response_item","payload":{"type":"message","status":"completed","id":"msg_a1","role":"assistant","content":[{"type":"output_text","text":"There are 3 files.","annotations":[]}],"internal_chat_message_metadata_passthrough":{"turn_id":"u-1"}},"metadata":{"history_sequence":5}}`,
	`{"timestamp":"2026-11-30T08:00:03.120Z","ordinal":16,"type":"event_msg","payload":{"type":"task_complete","root_turn_id":"u-1","turn_id":"u-1","last_agent_message":"There are 3 files.","started_at":1796025601,"completed_at":1796025603,"duration_ms":2120,"time_to_first_token_ms":90}}`,
	`{"timestamp":"2026-11-30T08:01:00.000Z","ordinal":17,"type":"event_msg","payload":{"type":"task_started","turn_id":"u-2","root_turn_id":"u-2","started_at":1796025660}}`,
	`{"timestamp":"2026-11-30T08:01:00.010Z","ordinal":18,"type":"event_msg","payload":{"type":"item_completed","thread_id":"01a1e000-0000-7000-8000-0000000000a1","turn_id":"u-2","item":{"type":"UserMessage","id":"um-2","content":[{"type":"text","text":"again","text_elements":[]}]}}}`,
	`{"timestamp":"2026-11-30T08:01:00.500Z","ordinal":19,"type":"event_msg","payload":{"type":"task_complete","root_turn_id":"u-2","turn_id":"u-2","last_agent_message":null,"error":{"message":"unexpected status 400","codex_error_info":"bad_request"},"started_at":1796025660,"completed_at":1796025660,"duration_ms":500}}`,
	`{"timestamp":"2026-11-30T08:02:00.000Z","ordinal":20,"type":"event_msg","payload":{"type":"task_started","turn_id":"u-3","root_turn_id":"u-3","started_at":1796025720}}`,
	`{"timestamp":"2026-11-30T08:02:00.010Z","ordinal":21,"type":"event_msg","payload":{"type":"item_completed","thread_id":"01a1e000-0000-7000-8000-0000000000a1","turn_id":"u-3","item":{"type":"UserMessage","id":"um-3","content":[{"type":"text","text":"patch it","text_elements":[]}]}}}`,
	`{"timestamp":"2026-11-30T08:02:01.000Z","ordinal":22,"type":"event_msg","payload":{"type":"item_completed","thread_id":"01a1e000-0000-7000-8000-0000000000a1","turn_id":"u-3","item":{"type":"FileChange","id":"call_3","changes":{"/src/app/b.txt":{"type":"delete","content":"old\n"},"/src/app/a.txt":{"type":"add","content":"new\n"}},"status":"completed","stdout":"Success.","stderr":""}}}`,
	`{"timestamp":"2026-11-30T08:02:02.000Z","ordinal":23,"type":"event_msg","payload":{"type":"turn_aborted","root_turn_id":"u-3","turn_id":"u-3","reason":"interrupted","started_at":1796025720,"completed_at":1796025722,"duration_ms":2000}}`,
}, "\n") + "\n"

// refLegacyThread is a thread in the reference's older layout, which the
// reference still writes to the threads it resumes from that layout, and
// reads for any thread without history_mode: message and reasoning
// events, no item ids, a fork's two session_meta records. Its last turn is
// as the oldest files have them: no turn records at all.
const refLegacyID = "01a1f000-0000-7000-8000-00000000000b"

var refLegacyThread = strings.Join([]string{
	`{"timestamp":"2026-12-01T10:00:00.000Z","type":"session_meta","payload":{"id":"01a1f000-0000-7000-8000-00000000000b","forked_from_id":"01a1f000-0000-7000-8000-00000000000a","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.169.0","source":"cli","model_provider":"openai"}}`,
	`{"timestamp":"2026-12-01T10:00:00.001Z","type":"session_meta","payload":{"id":"01a1f000-0000-7000-8000-00000000000a","timestamp":"2026-11-30T09:00:00.000Z","cwd":"/old","originator":"codex_cli_rs","cli_version":"0.168.0","source":"cli","model_provider":"openai"}}`,
	`{"timestamp":"2026-12-01T10:00:01.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t-1","started_at":1796119201,"model_context_window":1000}}`,
	`{"timestamp":"2026-12-01T10:00:01.001Z","type":"turn_context","payload":{"turn_id":"t-1","cwd":"/w","approval_policy":"on-request","sandbox_policy":{"type":"workspace-write","writable_roots":["/extra"],"network_access":true},"model":"gpt-5.5","effort":"medium","summary":"auto"}}`,
	`{"timestamp":"2026-12-01T10:00:01.002Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello there"}]}}`,
	`{"timestamp":"2026-12-01T10:00:01.003Z","type":"event_msg","payload":{"type":"user_message","message":"hello there","images":["https://example.com/a.png"],"local_images":["/w/b.png"],"text_elements":[{"byte_range":{"start":0,"end":5},"placeholder":"hello"}]}}`,
	`{"timestamp":"2026-12-01T10:00:02.000Z","type":"event_msg","payload":{"type":"agent_reasoning","text":"first thought"}}`,
	`{"timestamp":"2026-12-01T10:00:02.001Z","type":"event_msg","payload":{"type":"agent_reasoning","text":"second thought"}}`,
	`{"timestamp":"2026-12-01T10:00:02.002Z","type":"event_msg","payload":{"type":"agent_reasoning_raw_content","text":"raw thought"}}`,
	`{"timestamp":"2026-12-01T10:00:02.003Z","type":"response_item","payload":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"first thought"}],"encrypted_content":"e"}}`,
	`{"timestamp":"2026-12-01T10:00:03.000Z","type":"event_msg","payload":{"type":"patch_apply_end","call_id":"call_p","turn_id":"t-1","stdout":"ok","stderr":"","success":true,"changes":{"/w/old.txt":{"type":"update","unified_diff":"@@ -1 +1 @@\n-a\n+b\n","move_path":"/w/new.txt"},"/w/add.txt":{"type":"add","content":"x\n"}},"status":"completed"}}`,
	`{"timestamp":"2026-12-01T10:00:04.000Z","type":"event_msg","payload":{"type":"agent_message","message":"all done","phase":"final_answer","memory_citation":null}}`,
	`{"timestamp":"2026-12-01T10:00:04.001Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"all done"}]},"metadata":{"history_sequence":4}}`,
	`{"timestamp":"2026-12-01T10:00:04.002Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":20,"reasoning_output_tokens":5,"total_tokens":120},"last_token_usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":20,"reasoning_output_tokens":5,"total_tokens":120},"model_context_window":1000},"rate_limits":null}}`,
	`{"timestamp":"2026-12-01T10:00:04.003Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t-1","last_agent_message":"all done","completed_at":1796119204,"duration_ms":3004}}`,
	`{"timestamp":"2026-12-01T10:01:00.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t-2","started_at":1796119260}}`,
	`{"timestamp":"2026-12-01T10:01:00.001Z","type":"compacted","payload":{"message":"summary","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"summary of it all"}]}]}}`,
	`{"timestamp":"2026-12-01T10:01:00.002Z","type":"event_msg","payload":{"type":"context_compacted"}}`,
	`{"timestamp":"2026-12-01T10:01:00.003Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t-2","last_agent_message":null}}`,
	`{"timestamp":"2026-12-01T10:02:00.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t-3","started_at":1796119320}}`,
	`{"timestamp":"2026-12-01T10:02:00.001Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"undo me"}]}}`,
	`{"timestamp":"2026-12-01T10:02:00.002Z","type":"event_msg","payload":{"type":"user_message","message":"undo me","images":[],"local_images":[],"text_elements":[]}}`,
	`{"timestamp":"2026-12-01T10:02:00.003Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t-3","last_agent_message":null}}`,
	`{"timestamp":"2026-12-01T10:02:01.000Z","type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":1}}`,
	`{"timestamp":"2026-12-01T10:03:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"old style"}]}}`,
	`{"timestamp":"2026-12-01T10:03:00.001Z","type":"event_msg","payload":{"type":"user_message","message":"old style","images":null,"local_images":[],"text_elements":[]}}`,
	`{"timestamp":"2026-12-01T10:03:00.002Z","type":"event_msg","payload":{"type":"agent_message","message":"old answer"}}`,
	`{"timestamp":"2026-12-01T10:03:00.003Z","type":"event_msg","payload":{"type":"error","message":"stream gone","codex_error_info":{"response_stream_disconnected":{"http_status_code":null}}}}`,
}, "\n") + "\n"

// putRefThread writes a thread file into home's sessions, as the reference
// names it.
func putRefThread(t testing.TB, home, id string, created time.Time, body string) string {
	t.Helper()
	p := filepath.Join(datedDir(home, created), FileName(created, id))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func msAt(ms int64) time.Time { return time.UnixMilli(ms) }

func TestReadReferencePaginatedThread(t *testing.T) {
	s, home := openStore(t, Options{})
	created := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	putRefThread(t, home, refPaginatedID, created, refPaginatedThread)
	th, err := s.Read(testCtx(t), refPaginatedID, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Warnings) != 0 {
		t.Fatalf("warnings %v", th.Warnings)
	}
	wantMeta := SessionMeta{
		ID: refPaginatedID, CreatedAt: created, Cwd: "/src/app", ModelProvider: "openai", Source: "vscode",
		HistoryMode: "paginated", Originator: "codex_vscode", CLIVersion: "0.169.0", BaseInstructions: "Be brief.",
		Git: &GitInfo{SHA: "f00d", Branch: "main", OriginURL: "https://example.com/app.git"},
	}
	if diff := cmp.Diff(wantMeta, th.Meta); diff != "" {
		t.Errorf("meta (-want +got):\n%s", diff)
	}
	out, code, dur := "3\n", 0, int64(250)
	want := []Turn{
		{ID: "u-1", Kind: core.TurnRegular, Status: TurnCompleted, StartedAt: msAt(1796025601000), CompletedAt: msAt(1796025603120), Duration: 2120 * time.Millisecond,
			Items: []core.TurnItem{
				core.UserMessageItem{ID: "um-1", Content: []core.UserInput{core.TextInput("count the files")}},
				core.CommandExecutionItem{ID: "call_1", Command: "/bin/bash -lc 'ls | wc -l'", Argv: []string{"/bin/bash", "-lc", "ls | wc -l"},
					Cwd: "/src/app", Status: core.StatusCompleted, Source: core.SourceUnifiedExecStart, ProcessID: "4242",
					Actions:          []policy.CommandAction{{Kind: policy.ActionUnknown, Command: "ls | wc -l"}},
					AggregatedOutput: &out, ExitCode: &code, DurationMs: &dur},
				core.ReasoningItem{ID: "rs_1", Summary: []string{"Counting."}, Content: []string{"wc counts lines"}},
				core.AgentMessageItem{ID: "msg_a1", Text: "There are 3 files."},
			},
			ItemTimes: []ItemTimes{
				{StartedAt: msAt(1796025601060), CompletedAt: msAt(1796025601060)},
				{StartedAt: msAt(1796025602500), CompletedAt: msAt(1796025602500)},
				{StartedAt: msAt(1796025603000), CompletedAt: msAt(1796025603000)},
				{StartedAt: msAt(1796025603100), CompletedAt: msAt(1796025603100)},
			}},
		{ID: "u-2", Kind: core.TurnRegular, Status: TurnFailed, Error: &core.TurnError{Message: "unexpected status 400", Kind: core.KindBadRequest},
			StartedAt: msAt(1796025660000), CompletedAt: msAt(1796025660500), Duration: 500 * time.Millisecond,
			Items:     []core.TurnItem{core.UserMessageItem{ID: "um-2", Content: []core.UserInput{core.TextInput("again")}}},
			ItemTimes: []ItemTimes{{StartedAt: msAt(1796025660010), CompletedAt: msAt(1796025660010)}}},
		{ID: "u-3", Kind: core.TurnRegular, Status: TurnInterrupted, StartedAt: msAt(1796025720000), CompletedAt: msAt(1796025722000), Duration: 2 * time.Second,
			Items: []core.TurnItem{
				core.UserMessageItem{ID: "um-3", Content: []core.UserInput{core.TextInput("patch it")}},
				core.FileChangeItem{ID: "call_3", Status: core.StatusCompleted, Changes: []core.FileChange{
					{Path: "/src/app/a.txt", Kind: core.ChangeAdd, Diff: "new\n"},
					{Path: "/src/app/b.txt", Kind: core.ChangeDelete, Diff: "old\n"},
				}},
			},
			ItemTimes: []ItemTimes{
				{StartedAt: msAt(1796025720010), CompletedAt: msAt(1796025720010)},
				{StartedAt: msAt(1796025721000), CompletedAt: msAt(1796025721000)},
			}},
	}
	if diff := cmp.Diff(want, th.Turns, cmpopts.EquateEmpty(), cmpopts.EquateApproxTime(0), ignoreOrdinals); diff != "" {
		t.Errorf("turns (-want +got):\n%s", diff)
	}
	// The history is what the reference sends the model: its internal
	// member is not.
	if len(th.History) != 5 {
		t.Fatalf("history %d items", len(th.History))
	}
	for _, it := range th.History {
		if strings.Contains(string(it.Raw()), "internal_chat_message_metadata_passthrough") {
			t.Errorf("internal member kept: %s", it.Raw())
		}
	}
	if got := string(th.History[2].Raw()); got != `{"type":"function_call","status":"completed","id":"fc_1","name":"exec_command","arguments":"{\"cmd\":\"ls | wc -l\"}","call_id":"call_1"}` {
		t.Errorf("history item %s", got)
	}
	if tc := th.TurnContext; tc == nil || tc.Model != "gpt-5.5" || tc.Effort != "high" || tc.Sandbox.Mode != policy.SandboxDangerFullAccess || tc.ApprovalPolicy != policy.ApprovalNever {
		t.Errorf("turn context %+v", th.TurnContext)
	}
	if u := th.TokenUsage; u == nil || u.TurnID != "u-1" || u.Info.Total.TotalTokens != 15 || u.Info.ModelContextWindow != 200000 {
		t.Errorf("usage %+v", th.TokenUsage)
	}
	// The list entry agrees with the rebuild.
	sum, err := s.Summary(refPaginatedID)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Preview != "count the files" || sum.TurnCount != 3 || sum.LastTurnFailed || sum.Model != "gpt-5.5" || sum.Effort != "high" ||
		sum.Source != "vscode" || !sum.CreatedAt.Equal(created) {
		t.Errorf("summary %+v", sum)
	}
}

func TestReadReferenceLegacyThread(t *testing.T) {
	s, home := openStore(t, Options{})
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	putRefThread(t, home, refLegacyID, created, refLegacyThread)
	th, err := s.Read(testCtx(t), refLegacyID, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Warnings) != 0 {
		t.Fatalf("warnings %v", th.Warnings)
	}
	// The fork's own session_meta, not the copied source's.
	if th.Meta.ID != refLegacyID || th.Meta.ForkedFromID != "01a1f000-0000-7000-8000-00000000000a" || th.Meta.Cwd != "/w" || th.Meta.Source != "cli" {
		t.Errorf("meta %+v", th.Meta)
	}
	// Items without ids are numbered as the reference numbers them (and
	// renumbered after a rollback); the turn no record opened is named
	// after the record that opened it.
	type brief struct {
		ID     string
		Status TurnStatus
		Items  []string
	}
	var got []brief
	for _, tn := range th.Turns {
		b := brief{ID: tn.ID, Status: tn.Status}
		for _, it := range tn.Items {
			b.Items = append(b.Items, it.ItemID())
		}
		got = append(got, b)
	}
	want := []brief{
		{"t-1", TurnCompleted, []string{"item-1", "item-2", "call_p", "item-3"}},
		{"t-2", TurnCompleted, []string{"item-4"}},
		{"rollout-25", TurnCompleted, []string{"item-6", "item-7"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("turns (-want +got):\n%s", diff)
	}
	items := th.Turns[0].Items
	wantItems := []core.TurnItem{
		core.UserMessageItem{ID: "item-1", Content: []core.UserInput{
			{Kind: core.InputText, Text: "hello there", TextElements: []core.TextElement{{Start: 0, End: 5, Placeholder: "hello"}}},
			{Kind: core.InputImage, ImageURL: "https://example.com/a.png"},
			{Kind: core.InputLocalImage, Path: "/w/b.png"},
		}},
		core.ReasoningItem{ID: "item-2", Summary: []string{"first thought", "second thought"}, Content: []string{"raw thought"}},
		core.FileChangeItem{ID: "call_p", Status: core.StatusCompleted, Changes: []core.FileChange{
			{Path: "/w/add.txt", Kind: core.ChangeAdd, Diff: "x\n"},
			{Path: "/w/old.txt", Kind: core.ChangeUpdate, MovePath: "/w/new.txt", Diff: "@@ -1 +1 @@\n-a\n+b\n"},
		}},
		core.AgentMessageItem{ID: "item-3", Text: "all done", Phase: "final_answer"},
	}
	if diff := cmp.Diff(wantItems, items, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if k := th.Turns[1].Items[0]; k != (core.ContextCompactionItem{ID: "item-4"}) {
		t.Errorf("compaction %+v", k)
	}
	// The compaction replaced the history; the rolled back turn's items
	// are gone from it.
	var texts []string
	for _, it := range th.History {
		var m struct {
			Content []struct{ Text string } `json:"content"`
		}
		_ = json.Unmarshal(it.Raw(), &m)
		if len(m.Content) > 0 {
			texts = append(texts, m.Content[0].Text)
		}
	}
	if diff := cmp.Diff([]string{"summary of it all", "old style"}, texts); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	tc := th.TurnContext
	if tc == nil || tc.ApprovalPolicy != policy.ApprovalOnRequest || tc.Sandbox.Mode != policy.SandboxWorkspaceWrite ||
		!tc.Sandbox.NetworkAccess || len(tc.Sandbox.WritableRoots) != 1 || tc.Effort != "medium" {
		t.Errorf("turn context %+v", tc)
	}
	sum, err := s.Summary(refLegacyID)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Preview != "hello there" || sum.TurnCount != 3 || sum.LastTurnFailed || sum.ForkedFromID != "01a1f000-0000-7000-8000-00000000000a" {
		t.Errorf("summary %+v", sum)
	}
}

func TestReferenceThreadWithAForeignDamagedLine(t *testing.T) {
	// A line another program wrote badly, in the middle of a reference
	// thread: it is skipped and reported, and the thread still loads.
	var w warnings
	s, home := openStore(t, Options{OnWarning: w.add})
	lines := strings.SplitAfter(refPaginatedThread, "\n")
	damaged := strings.Join(lines[:8], "") + `{"timestamp":"2026-11-30T08:00:01.070Z","type":"event_msg","payload":{"type":"item_comp` + "\n" +
		"\x00\x01 not a record\n" + strings.Join(lines[8:], "")
	p := putRefThread(t, home, refPaginatedID, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), damaged)
	th, err := s.Read(testCtx(t), refPaginatedID, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Turns) != 3 || len(th.Turns[0].Items) != 4 || len(th.Warnings) != 2 {
		t.Fatalf("turns %d, warnings %v", len(th.Turns), th.Warnings)
	}
	if !w.contains(p+":9: unreadable record skipped") || !w.contains(p+":10: unreadable record skipped") {
		t.Fatalf("not logged: %v", w.list())
	}
	if sum, err := s.Summary(refPaginatedID); err != nil || sum.TurnCount != 3 {
		t.Fatalf("summary %+v %v", sum, err)
	}
}

func TestForkOfReferenceThreadIsInTheLegacyLayout(t *testing.T) {
	s, home := openStore(t, Options{Version: "9.9.9"})
	ctx := testCtx(t)
	putRefThread(t, home, refPaginatedID, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), refPaginatedThread)
	src, err := s.Read(ctx, refPaginatedID, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fk, err := s.Fork(ctx, ForkOptions{SourceID: refPaginatedID, NewID: uuid7At(baseTime, 9)})
	if err != nil {
		t.Fatal(err)
	}
	// The reference reads typed items only in the threads it projects
	// itself: the fork has them as events, and agentd reads the same turns.
	b := string(must(os.ReadFile(fk.Path)))
	if strings.Contains(b, `"type":"UserMessage"`) || strings.Contains(b, `"history_mode"`) || !strings.Contains(b, `"type":"user_message"`) {
		t.Fatalf("fork records:\n%s", b)
	}
	opts := []cmp.Option{cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Turn{}, "ItemTimes"), ignoreOrdinals}
	if diff := cmp.Diff(src.Turns, fk.Turns, opts...); diff != "" {
		t.Errorf("fork turns (-source +fork):\n%s", diff)
	}
	if len(fk.History) != len(src.History) || fk.Meta.ForkedFromID != refPaginatedID || fk.Meta.CLIVersion != "9.9.9" || fk.Meta.HistoryMode != "" {
		t.Errorf("fork history %d, meta %+v", len(fk.History), fk.Meta)
	}
}

func TestFormat1ThreadsStillRead(t *testing.T) {
	// A thread agentd wrote before format 2 lists and rebuilds as the same
	// thread written now.
	s, home := openStore(t, Options{})
	old := testMeta(uuid7At(baseTime, 1), baseTime)
	now := testMeta(uuid7At(baseTime.Add(time.Minute), 2), baseTime.Add(time.Minute))
	oldPath := writeThreadFileV1(t, home, old, 3, "Old name")
	writeThreadFile(t, home, now, 3, "")
	a, err := s.Read(testCtx(t), old.ID, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Read(testCtx(t), now.ID, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "Old name" || len(a.Warnings) != 0 || len(a.Turns) != 3 {
		t.Fatalf("format 1 thread %+v", a.Summary())
	}
	strip := func(turns []Turn) []Turn {
		out := make([]Turn, len(turns))
		for i, tn := range turns {
			tn.ID, tn.StartedAt, tn.CompletedAt, tn.ItemTimes = "", time.Time{}, time.Time{}, nil
			tn.Items = nil
			out[i] = tn
		}
		return out
	}
	if diff := cmp.Diff(strip(b.Turns), strip(a.Turns), cmpopts.EquateEmpty(), ignoreOrdinals); diff != "" {
		t.Errorf("turns (-format 2 +format 1):\n%s", diff)
	}
	for i := range a.Turns {
		if len(a.Turns[i].Items) != 2 || a.Turns[i].Items[0].(core.UserMessageItem).Content[0].Text != "prompt "+string(rune('0'+i))+" of "+old.ID {
			t.Errorf("turn %d items %+v", i, a.Turns[i].Items)
		}
	}
	sum, err := s.Summary(old.ID)
	if err != nil || sum.Name != "Old name" || sum.TurnCount != 3 || sum.Preview != "prompt 0 of "+old.ID {
		t.Fatalf("summary %+v %v", sum, err)
	}
	// A rename in the session index wins over the recorded name.
	if err := s.SetName(testCtx(t), old.ID, "New name"); err != nil {
		t.Fatal(err)
	}
	if sum, _ := s.Summary(old.ID); sum.Name != "New name" {
		t.Fatalf("renamed %+v", sum)
	}
	// Format 1's rollback record.
	if err := appendRecord(oldPath, appendLine(nil, time.Now(), LineRollback, "", []byte(`{"numTurns":1}`))); err != nil {
		t.Fatal(err)
	}
	if sum, _ := s.Summary(old.ID); sum.TurnCount != 2 {
		t.Fatalf("after rollback %+v", sum)
	}
	if th, _ := s.Read(testCtx(t), old.ID, ReadOptions{}); len(th.Turns) != 2 || len(th.History) != 4 {
		t.Fatalf("after rollback %d turns, %d history items", len(th.Turns), len(th.History))
	}
}

func TestReferenceThreadAndRenameAppearWithoutRestart(t *testing.T) {
	s, home := openStore(t, Options{})
	ctx := testCtx(t)
	recordThread(t, s, "t-own", turnScript{id: "a", prompt: "mine", end: "completed"})
	if page, _, _, _ := s.List(ListOptions{}); len(page) != 1 {
		t.Fatalf("page %v", ids(page))
	}
	// The reference writes a thread and names it while this store runs.
	putRefThread(t, home, refPaginatedID, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), refPaginatedThread)
	f, err := os.OpenFile(filepath.Join(home, SessionIndexName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"` + refPaginatedID + `","thread_name":"From the reference","updated_at":"2026-11-30T08:05:00.000000000Z"}` + "\n")
	// A rename still being written is not read yet.
	f.WriteString(`{"id":"t-own","thread_name":"Half`)
	page, _, _, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ThreadSummary{}
	for _, e := range page {
		got[e.ID] = e
	}
	if e, ok := got[refPaginatedID]; !ok || e.Name != "From the reference" || e.Preview != "count the files" || e.TurnCount != 3 {
		t.Fatalf("page %+v", page)
	}
	if got["t-own"].Name != "" {
		t.Fatalf("torn rename read: %+v", got["t-own"])
	}
	f.WriteString(` done","updated_at":"2026-11-30T08:06:00.000000000Z"}` + "\n")
	f.Close()
	if sum, _ := s.Summary("t-own"); sum.Name != "Half done" {
		t.Fatalf("completed rename %+v", sum)
	}
	// Our own rename lands on its own line after another writer's.
	if err := s.SetName(ctx, refPaginatedID, "Ours"); err != nil {
		t.Fatal(err)
	}
	th, err := s.Read(ctx, refPaginatedID, ReadOptions{SkipHistory: true})
	if err != nil || th.Name != "Ours" {
		t.Fatalf("read %v %v", th, err)
	}
	lines := strings.Split(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(home, SessionIndexName))))), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], `{"id":"`+refPaginatedID+`","thread_name":"Ours","updated_at":"`) {
		t.Fatalf("session index %q", lines)
	}
}

func TestOldIndexCacheIsReplaced(t *testing.T) {
	// The cache of a version that did not read the reference's threads
	// would keep them unlisted: it is not read, and is removed.
	home := t.TempDir()
	putRefThread(t, home, refLegacyID, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), refLegacyThread)
	var olds []string
	for _, name := range oldIndexCacheNames {
		old := filepath.Join(home, name)
		if err := os.WriteFile(old, []byte("stale"), 0o600); err != nil {
			t.Fatal(err)
		}
		olds = append(olds, old)
	}
	s, err := Open(home, Options{NoGitInfo: true, NoIndexWarmUp: true})
	if err != nil {
		t.Fatal(err)
	}
	if page, _, _, _ := s.List(ListOptions{}); len(page) != 1 {
		t.Fatalf("page %v", ids(page))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, old := range olds {
		if fileExists(old) {
			t.Fatalf("the old cache %s is still there", old)
		}
	}
	if !fileExists(filepath.Join(home, indexCacheName)) {
		t.Fatal("the new cache is missing")
	}
}

func TestReferenceRecordVariants(t *testing.T) {
	// Spellings the reference's versions use, read without losing the
	// record.
	m, err := decodeMeta([]byte(`{"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w","originator":"o","cli_version":"0.100.0",` +
		`"source":{"subagent":{"thread_spawn":{"parent_thread_id":"p","depth":1}}},"base_instructions":"plain text","git":null}`))
	if err != nil || m.Source != "subAgentThreadSpawn" || m.BaseInstructions != "plain text" || m.Git != nil || m.CLIVersion != "0.100.0" {
		t.Fatalf("meta %+v %v", m, err)
	}
	var w wireTurnContext
	if err := json.Unmarshal([]byte(`{"cwd":"/w","approval_policy":{"granular":{"sandbox_approval":true}},"sandbox_policy":{"type":"external-sandbox","network_access":"enabled"},"model":"m","effort":null,"summary":"auto"}`), &w); err != nil {
		t.Fatal(err)
	}
	tc := w.turnContext()
	if tc.ApprovalPolicy != "" || tc.Sandbox.Mode != policy.SandboxExternal || !tc.Sandbox.NetworkAccess || tc.Model != "m" {
		t.Fatalf("turn context %+v", tc)
	}
}

// A review in the reference's paginated layout: typed EnteredReviewMode
// and ExitedReviewMode items (written before the turn's start record,
// as the reference writes them), read as the review's items.
func TestReadReferenceReviewItems(t *testing.T) {
	const id = "01a23537-24df-7003-916b-20ea31004a44"
	body := strings.Join([]string{
		`{"timestamp":"2026-12-02T05:25:36.317Z","ordinal":0,"type":"session_meta","payload":{"session_id":"` + id + `","id":"` + id + `","timestamp":"2026-12-02T05:25:36.000Z","cwd":"/r","originator":"acceptance","cli_version":"0.169.0","source":"vscode","model_provider":"mock","history_mode":"paginated"}}`,
		`{"timestamp":"2026-12-02T05:25:36.318Z","ordinal":1,"type":"event_msg","payload":{"type":"item_completed","thread_id":"` + id + `","turn_id":"rv-1","item":{"type":"EnteredReviewMode","id":"e-1","target":{"type":"baseBranch","branch":"main"},"user_facing_hint":"changes against 'main'"},"started_at_ms":1796189136264,"completed_at_ms":1796189136265}}`,
		`{"timestamp":"2026-12-02T05:25:36.688Z","ordinal":6,"type":"event_msg","payload":{"type":"item_completed","thread_id":"` + id + `","turn_id":"rv-1","item":{"type":"ExitedReviewMode","id":"x-1","review_output":{"findings":[{"title":"[P1] Bad thing","body":"It breaks.","confidence_score":0.8,"priority":1,"code_location":{"absolute_file_path":"/r/a.txt","line_range":{"start":2,"end":3}}}],"overall_correctness":"patch is incorrect","overall_explanation":"One bug.","overall_confidence_score":0.7}},"started_at_ms":1796189136688,"completed_at_ms":1796189136688}}`,
		`{"timestamp":"2026-12-02T05:25:36.692Z","ordinal":8,"type":"event_msg","payload":{"type":"item_completed","thread_id":"` + id + `","turn_id":"rv-1","item":{"type":"AgentMessage","id":"msg_1","content":[{"type":"Text","text":"One bug."}]},"started_at_ms":1796189136692,"completed_at_ms":1796189136692}}`,
		`{"timestamp":"2026-12-02T05:25:36.695Z","ordinal":9,"type":"event_msg","payload":{"type":"task_complete","root_turn_id":"rv-1","turn_id":"rv-1","last_agent_message":null,"started_at":1796189136,"completed_at":1796189136,"duration_ms":225}}`,
	}, "\n") + "\n"
	s, home := openStore(t, Options{})
	putRefThread(t, home, id, time.Date(2026, 12, 2, 5, 25, 36, 0, time.UTC), body)
	th, err := s.Read(testCtx(t), id, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Warnings) != 0 || len(th.Turns) != 1 || len(th.Turns[0].Items) != 3 || th.Turns[0].Status != TurnCompleted {
		t.Fatalf("turns %+v, warnings %v", th.Turns, th.Warnings)
	}
	entered, ok1 := th.Turns[0].Items[0].(core.EnteredReviewModeItem)
	exited, ok2 := th.Turns[0].Items[1].(core.ExitedReviewModeItem)
	if !ok1 || !ok2 || entered.ID != "e-1" || entered.Hint != "changes against 'main'" || entered.Target.Branch != "main" ||
		exited.ID != "x-1" || exited.Output == nil || len(exited.Output.Findings) != 1 ||
		exited.Review != "One bug.\n\nReview comment:\n\n- [P1] Bad thing — /r/a.txt:2-3\n  It breaks." {
		t.Fatalf("review items %+v", th.Turns[0].Items)
	}
}

// The reference numbers its records (ordinal); a thread whose numbers are
// missing, repeated, out of order or huge (openai/codex#45150, #35746:
// files that the reference itself then misread) reads as the same thread:
// agentd goes by the order of the lines.
func TestReferenceOrdinalsDoNotMatter(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(refPaginatedThread, "\n"), "\n")
	renumber := map[int]string{3: "", 10: `,"ordinal":9`, 15: `,"ordinal":2`, 20: `,"ordinal":18446744073709551615`, 21: `,"ordinal":-4`}
	for i, repl := range renumber {
		want := fmt.Sprintf(`,"ordinal":%d`, i)
		if !strings.Contains(lines[i], want) {
			t.Fatalf("line %d has no %s", i, want)
		}
		lines[i] = strings.Replace(lines[i], want, repl, 1)
	}
	created := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	read := func(content string) *Thread {
		t.Helper()
		var w warnings
		s, home := openStore(t, Options{OnWarning: w.add})
		putRefThread(t, home, refPaginatedID, created, content)
		th, err := s.Read(testCtx(t), refPaginatedID, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(w.list()) != 0 || len(th.Warnings) != 0 {
			t.Fatalf("warnings %v %v", w.list(), th.Warnings)
		}
		return th
	}
	want, got := read(refPaginatedThread), read(strings.Join(lines, "\n")+"\n")
	if len(want.Turns) != 3 || !reflect.DeepEqual(got.Turns, want.Turns) || !reflect.DeepEqual(got.History, want.History) {
		t.Fatalf("renumbered: %d turns, %d history items; as written: %d, %d", len(got.Turns), len(got.History), len(want.Turns), len(want.History))
	}
}
