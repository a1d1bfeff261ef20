package core

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/model/demo"
	"github.com/agentd-dev/agentd/core/policy"
)

// A whole turn through the core against the built-in demo model, over
// loopback HTTP with the real client: the model calls exec_command, the
// command runs, and the model reports its output.
func TestDemoProviderTurn(t *testing.T) {
	url, stop, err := demo.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := model.NewClient(model.Provider{ID: "demo", BaseURL: url, WireAPI: "responses"})
	s, err := NewSession(Config{
		ThreadID: "demo-thread", Model: "demo", Provider: "demo", Client: client,
		Cwd: t.TempDir(), ApprovalPolicy: policy.ApprovalNever, Sandbox: policy.FullAccess(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	col := collect(t, s, nil)
	if _, err := s.Call(ctx10(t), userInput("run: echo hello-from-demo")); err != nil {
		t.Fatal(err)
	}
	evs := col.waitFor(turnEnded)
	done := evs[len(evs)-1].Msg.(TurnComplete)
	if done.Error != nil || !strings.Contains(done.LastAgentMessage, "hello-from-demo") {
		t.Fatalf("turn = %+v", done)
	}
	_, completed := commandItems(evs)
	if len(completed) != 1 || completed[0].Status != StatusCompleted || !strings.Contains(*completed[0].AggregatedOutput, "hello-from-demo") {
		t.Fatalf("command = %+v", completed)
	}
}
