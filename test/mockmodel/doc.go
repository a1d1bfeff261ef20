// Package mockmodel is a scripted OpenAI Responses server for tests.
//
// It serves real HTTP: on loopback (New), for core tests and for end-to-end
// tests that point the agentd binary at it through its config, or over an
// in-memory network (NewInMemory) for tests inside a testing/synctest
// bubble. Each POST .../responses takes the next scripted Response from a
// queue; every request is recorded for assertions.
//
// The server fails the test (t.Errorf) when a request arrives with nothing
// scripted for it, when a request's input has a tool output without its call
// or a call without its output, and, unless AllowUnused is given, when
// scripted responses are left over at the end of the test.
//
// A tool-call turn is scripted as two responses:
//
//	s := mockmodel.New(t)
//	s.Enqueue(
//		mockmodel.Reply("resp_1", mockmodel.ExecCommand("call_1", "echo hi")),
//		mockmodel.Reply("resp_2", mockmodel.Text("msg_1", "It printed hi.")),
//	)
//	// point the client at s.URL(), run the turn, then:
//	out, _ := s.Requests()[1].ToolOutput("call_1")
//
// Outside a test, Serve runs the same server on a listener (the load
// harness, test/load, runs it as a process of its own), with Respond
// computing each answer from the request and DropRequests keeping none.
// StampedText streams deltas stamped with the time each is written, so a
// client can measure the delay from the model's write to its own read.
package mockmodel
