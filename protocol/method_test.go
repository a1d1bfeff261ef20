package protocol

import (
	"maps"
	"sync"
	"testing"
)

// The table is built at first use: lookups racing to be first (as the
// first requests of several connections do) get the same entries, and
// what the table holds is what the program's start used to register:
// every kind, in registration order, with the experimental flags.
func TestTableBuiltOnceAtFirstUse(t *testing.T) {
	const n = 8
	got := make([]*MethodInfo, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], _ = Lookup(ClientRequest, "initialize") })
	}
	wg.Wait()
	for _, m := range got {
		if m == nil || m != got[0] {
			t.Fatalf("lookups got different entries: %v", got)
		}
	}
	counts := map[MethodKind]int{}
	for _, kind := range []MethodKind{ClientRequest, ClientNotification, ServerRequest, ServerNotification} {
		counts[kind] = len(Methods(kind))
	}
	if want := map[MethodKind]int{ClientRequest: 187, ClientNotification: 1, ServerRequest: 5, ServerNotification: 41}; !maps.Equal(counts, want) {
		t.Fatalf("methods by kind %v, want %v", counts, want)
	}
	if o := table().order[ClientRequest]; o[0] != "initialize" || o[1] != "server/diagnostics" || o[len(o)-1] != "fuzzyFileSearch/sessionStop" {
		t.Fatalf("client requests not in registration order: %v", o)
	}
	if m, _ := Lookup(ClientRequest, "memory/reset"); m == nil || !m.Experimental || !m.NameOnly || m.Params != nil || m.Result != nil {
		t.Fatalf("memory/reset: %+v", m)
	}
	if m, _ := Lookup(ClientRequest, "turn/start"); m == nil || m.NameOnly {
		t.Fatalf("turn/start: %+v", m)
	}
	if m, _ := Lookup(ClientRequest, "thread/settings/update"); m == nil || !m.Experimental {
		t.Fatal("thread/settings/update is not experimental")
	}
	if m, _ := Lookup(ServerNotification, "thread/readState/changed"); m == nil || !m.ExperimentalDelivery {
		t.Fatal("thread/readState/changed is not delivered to experimental connections only")
	}
	if m, _ := Lookup(ServerNotification, "turn/started"); m == nil || m.ExperimentalDelivery || m.Params == nil || m.Result != nil {
		t.Fatalf("turn/started: %+v", m)
	}
}
