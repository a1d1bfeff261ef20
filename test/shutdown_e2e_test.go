package test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// SIGTERM: stop accepting, refuse new requests (-32001, retryable), let
// the request in flight finish and be answered, then exit 0.
func TestSIGTERMDrainsInFlightWork(t *testing.T) {
	home := shortTempDir(t)
	sock := filepath.Join(home, "s.sock")
	d := Start(t, Options{Home: home, Listen: []string{"ws://127.0.0.1:0", "unix://" + sock}, TestHooks: true})
	c := d.DialWS(WSOptions{})
	c.Initialize("drain", nil)
	id := c.Request("test/sleep", map[string]any{"ms": 1000})
	waitStarted(d, "test/sleep", 1)

	d.Signal(syscall.SIGTERM)
	d.WaitLog(func(l LogLine) bool { return l.Msg == "shutting down" })
	WantError(t, c.Call("test/sleep", map[string]any{"ms": 0}), codeOverloaded, "Server overloaded; retry later.")
	if conn, err := net.Dial("tcp", d.WSAddr()); err == nil {
		conn.Close()
		t.Errorf("still accepting connections while draining")
	}
	if m := c.Response(id); string(m.Result) != `{"slept":1000}` {
		t.Fatalf("in-flight request: %s", m.Raw)
	}
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if err := c.WaitClosed(); err == nil {
		t.Fatal("connection still open")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket file left: %v", err)
	}
	d.WaitLog(LogMsg("shutdown complete"))
}

// A second signal exits at once, without waiting for work in flight, and
// still removes the socket file.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	home := shortTempDir(t)
	sock := filepath.Join(home, "s.sock")
	d := Start(t, Options{Home: home, Listen: []string{"stdio://", "unix://" + sock}, TestHooks: true})
	c := d.Stdio()
	c.Initialize("twice", nil)
	c.Request("test/sleep", map[string]any{"ms": 600000})
	waitStarted(d, "test/sleep", 1)

	d.Signal(syscall.SIGINT)
	d.WaitLog(func(l LogLine) bool { return l.Msg == "shutting down" })
	d.Signal(syscall.SIGINT)
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if !d.HasLog(LogMsg("again; exiting now")) {
		t.Errorf("forced exit not logged")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket file left: %v", err)
	}
}

// Work that outlives the shutdown timeout is abandoned, with a log line,
// and the process still exits 0.
func TestShutdownDeadline(t *testing.T) {
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}, TestHooks: true,
		Config: []string{"server.shutdown_timeout_ms=200"}})
	c := d.DialWS(WSOptions{})
	c.Initialize("deadline", nil)
	c.Request("test/sleep", map[string]any{"ms": 600000})
	waitStarted(d, "test/sleep", 1)
	d.Signal(syscall.SIGTERM)
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if !d.HasLog(LogMsg("shutdown deadline reached")) {
		t.Errorf("abandoned work not logged")
	}
}
