package test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

const codeRequestCancelled = -32800

// A large recursive fs/remove (in the test's own tree) cancelled while it
// runs stops, answers -32800 saying how many entries it removed, and
// leaves exactly the rest of the tree.
func TestCancelLargeRemove(t *testing.T) {
	tree, watcher := watchedTree(t)
	total := countEntries(t, tree)

	d := Start(t, Options{})
	c := d.Stdio()
	c.Initialize("canceller", nil)
	id := c.Request("fs/remove", map[string]any{"path": tree})
	// Cancelled once the removal is under way: the first entry is gone.
	waitRemoval(t, watcher)
	removed := cancelMidway(t, c, id, `^fs/remove of `+regexp.QuoteMeta(tree)+` stopped after removing (\d+) entries: request cancelled by the client$`)
	left := countEntries(t, tree)
	if removed == 0 || left == 0 {
		t.Fatalf("removed %d, %d left: not stopped mid-way", removed, left)
	}
	t.Logf("cancelled after removing %d of %d entries", removed, total)
	if removed+left != total {
		t.Fatalf("removed %d + left %d != %d: the answer does not say what was done", removed, left, total)
	}
	line := d.WaitLog(LogMsg("fs/remove stopped"))
	if line.Str("request") != string(id) || line.Fields["conn"] == nil {
		t.Fatalf("stopped log without its ids: %s", line.Raw)
	}
	// The connection goes on.
	fsCall(t, c, "fs/getMetadata", map[string]any{"path": tree}, nil)
}

// A large recursive fs/remove (in the test's own tree) running when the
// daemon gets SIGTERM stops at once, rather than at the shutdown
// deadline, answers -32603 saying how many entries it removed, and the
// daemon exits 0.
func TestShutdownStopsLargeRemove(t *testing.T) {
	tree, watcher := watchedTree(t)
	total := countEntries(t, tree)

	d := Start(t, Options{Config: []string{"server.shutdown_timeout_ms=600000"}})
	c := d.Stdio()
	c.Initialize("shutdown", nil)
	id := c.Request("fs/remove", map[string]any{"path": tree})
	waitRemoval(t, watcher)
	d.Signal(syscall.SIGTERM)
	m := c.Response(id)
	if m.Error == nil || m.Error.Code != codeInternal {
		t.Fatalf("want -32603, got %s", m.Raw)
	}
	re := regexp.MustCompile(`^fs/remove of ` + regexp.QuoteMeta(tree) + ` stopped after removing (\d+) entries: the server is shutting down$`)
	sub := re.FindStringSubmatch(m.Error.Message)
	if sub == nil {
		t.Fatalf("message %q", m.Error.Message)
	}
	removed, _ := strconv.Atoi(sub[1])
	left := countEntries(t, tree)
	t.Logf("stopped by the shutdown after removing %d of %d entries", removed, total)
	if removed == 0 || left == 0 || removed+left != total {
		t.Fatalf("removed %d, %d left of %d: not stopped mid-way, or not said", removed, left, total)
	}
	if code := d.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if d.HasLog(LogMsg("shutdown deadline reached; abandoning in-flight work")) {
		t.Fatal("the removal was given up at the deadline, not stopped")
	}
}

// watchedTree makes a tree of 40 directories of 125 empty files in the
// test's temporary directory, and a watcher of its directories (to see
// a removal begin).
func watchedTree(t *testing.T) (string, *fsnotify.Watcher) {
	t.Helper()
	tree := filepath.Join(t.TempDir(), "big")
	const dirs, files = 40, 125
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watcher.Close() })
	for i := range dirs {
		sub := filepath.Join(tree, fmt.Sprintf("d%03d", i))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range files {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", j)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := watcher.Add(sub); err != nil {
			t.Fatal(err)
		}
	}
	return tree, watcher
}

// A large recursive fs/copy cancelled while it runs stops, answers -32800
// saying how many entries it copied, and the destination holds exactly
// those.
func TestCancelLargeCopy(t *testing.T) {
	tmp := t.TempDir()
	src, dst := filepath.Join(tmp, "src"), filepath.Join(tmp, "dst")
	const dirs, files = 40, 125
	for i := range dirs {
		sub := filepath.Join(src, fmt.Sprintf("d%03d", i))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range files {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", j)), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	if err := watcher.Add(tmp); err != nil {
		t.Fatal(err)
	}

	d := Start(t, Options{})
	c := d.Stdio()
	c.Initialize("canceller", nil)
	id := c.Request("fs/copy", map[string]any{"sourcePath": src, "destinationPath": dst, "recursive": true})
	waitCreated(t, watcher, dst)
	copied := cancelMidway(t, c, id, `^fs/copy to `+regexp.QuoteMeta(dst)+` stopped after copying (\d+) entries: request cancelled by the client$`)
	there, total := countEntries(t, dst), countEntries(t, src)
	t.Logf("cancelled after copying %d of %d entries", copied, total)
	if there != copied || copied >= total {
		t.Fatalf("copied %d, %d in the destination, %d in the source: not stopped mid-way, or not said", copied, there, total)
	}
}

// waitRemoval waits until the watcher sees an entry removed.
// cancelMidway cancels request id, wants -32800 with a message matching
// pattern, and returns the count its first group says was done.
func cancelMidway(t *testing.T, c *Client, id json.RawMessage, pattern string) int {
	t.Helper()
	c.Notify("$/cancelRequest", map[string]any{"id": id})
	m := c.Response(id)
	if m.Error == nil || m.Error.Code != codeRequestCancelled {
		t.Fatalf("want -32800, got %s", m.Raw)
	}
	sub := regexp.MustCompile(pattern).FindStringSubmatch(m.Error.Message)
	if sub == nil {
		t.Fatalf("message %q", m.Error.Message)
	}
	n, _ := strconv.Atoi(sub[1])
	return n
}

func waitRemoval(t *testing.T, w *fsnotify.Watcher) {
	t.Helper()
	timeout := time.After(WaitTimeout)
	for {
		select {
		case ev := <-w.Events:
			if ev.Has(fsnotify.Remove) {
				return
			}
		case err := <-w.Errors:
			t.Fatalf("watching the tree: %v", err)
		case <-timeout:
			t.Fatal("nothing was removed")
		}
	}
}

// countEntries counts path and everything under it.
func countEntries(t *testing.T, path string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(path, func(string, fs.DirEntry, error) error {
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A request waiting its turn behind another about the same thread is
// answered -32800 as soon as it is cancelled, and never runs; the request
// it waited for is cancelled in turn, and the one behind both runs.
func TestCancelQueuedThreadRequest(t *testing.T) {
	d := Start(t, Options{TestHooks: true, Config: []string{`model_provider="demo"`}})
	c := d.Stdio()
	c.Initialize("canceller", nil)
	id := startThread(t, c, map[string]any{"cwd": t.TempDir()})

	// The sleep holds the thread's line: the renames wait behind it.
	sleep := c.Request("test/sleep", map[string]any{"ms": 600_000, "threadId": id})
	never := c.Request("thread/name/set", map[string]any{"threadId": id, "name": "never"})
	kept := c.Request("thread/name/set", map[string]any{"threadId": id, "name": "kept"})
	c.Notify("$/cancelRequest", map[string]any{"id": never})
	isAnswer := func(m Message) bool { return m.Method == "" }
	if m := c.ReadUntil(isAnswer); string(m.ID) != string(never) {
		t.Fatalf("first answer %s, want the cancelled rename's", m.Raw)
	} else {
		WantError(t, m, codeRequestCancelled, "Request cancelled before it started")
	}
	// Cancelling it again, or an id never sent, is ignored.
	c.Notify("$/cancelRequest", map[string]any{"id": never})
	c.Notify("$/cancelRequest", map[string]any{"id": 9999})
	c.Notify("$/cancelRequest", map[string]any{"id": sleep})
	// The sleep has started, or, on a loaded machine, is about to: either
	// way it is answered -32800 at once.
	if m := c.ReadUntil(isAnswer); string(m.ID) != string(sleep) {
		t.Fatalf("second answer %s, want the sleep's", m.Raw)
	} else if WantError(t, m, codeRequestCancelled, ""); m.Error.Message != "Request cancelled" && m.Error.Message != "Request cancelled before it started" {
		t.Fatalf("sleep answered %q", m.Error.Message)
	}
	if m := c.ReadUntil(isAnswer); string(m.ID) != string(kept) {
		t.Fatalf("third answer %s, want the kept rename's", m.Raw)
	} else {
		WantResult(t, m)
	}
	read := c.Call("thread/read", map[string]any{"threadId": id})
	if name := str(unmarshal(t, WantResult(t, read)), "thread", "name"); name != "kept" {
		t.Fatalf("name %q, want kept", name)
	}
	if d.HasLog(func(l LogLine) bool { return l.Msg == "request finished" && l.Str("request") == string(never) }) {
		t.Fatal("the cancelled rename ran")
	}
}

// A command/exec the client cancels is killed with its process group and
// answered -32800: a streaming one (a session), and a plain one.
func TestCancelCommandExec(t *testing.T) {
	d := Start(t, Options{})
	c := d.Stdio()
	c.Initialize("canceller", nil)

	streaming := c.Request("command/exec", map[string]any{
		"command": []string{"sh", "-c", "echo $$; exec sleep 600"}, "processId": "s1",
		"streamStdoutStderr": true, "disableTimeout": true, "sandboxPolicy": noSandbox,
	})
	delta := nextDelta(t, c, "s1")
	out, _ := base64.StdEncoding.DecodeString(delta.DeltaBase64)
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("pid %q: %v", out, err)
	}
	c.Notify("$/cancelRequest", map[string]any{"id": streaming})
	WantError(t, c.Response(streaming), codeRequestCancelled, "command/exec was cancelled: its process group was killed")
	waitGone(t, pid)
	WantError(t, c.Call("command/exec/terminate", map[string]any{"processId": "s1"}), codeInvalidRequest,
		`no active command/exec for process id "s1"`)

	// A plain one: it says its pid through a file the test watches.
	dir := t.TempDir()
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	if err := watcher.Add(dir); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "pid")
	plain := c.Request("command/exec", map[string]any{
		"command": []string{"sh", "-c", `echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 600`},
		"cwd":     dir, "disableTimeout": true, "sandboxPolicy": noSandbox,
	})
	waitCreated(t, watcher, pidFile)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		t.Fatalf("pid %q: %v", b, err)
	}
	c.Notify("$/cancelRequest", map[string]any{"id": plain})
	WantError(t, c.Response(plain), codeRequestCancelled, "command/exec was cancelled: its process group was killed")
	waitGone(t, pid)
}

// waitCreated waits until the watcher sees path made (or moved there).
func waitCreated(t *testing.T, w *fsnotify.Watcher, path string) {
	t.Helper()
	timeout := time.After(WaitTimeout)
	for {
		select {
		case ev := <-w.Events:
			if ev.Name == path && ev.Has(fsnotify.Create) {
				return
			}
		case err := <-w.Errors:
			t.Fatalf("watching %s: %v", path, err)
		case <-timeout:
			t.Fatalf("%s was not made", path)
		}
	}
}
