package test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// fs/remove, fs/copy and fs/writeFile refuse to destroy the user's home,
// agentd's home and their ancestors. Every path here is in the test's own
// temporary tree: the daemon's HOME and home are made there, so that a
// missing guard could only destroy the test's files.
func TestFsGuardKeepsHomes(t *testing.T) {
	tmp := t.TempDir()
	userHome := filepath.Join(tmp, "users", "alice")
	agentdHome := filepath.Join(tmp, "state", "agentd")
	for _, d := range []string{userHome, agentdHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(tmp, "src.txt")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := Start(t, Options{Home: agentdHome, Env: []string{"HOME=" + userHome}})
	c := d.Stdio()
	c.Initialize("e2e", nil)
	for _, tc := range []struct {
		method string
		params map[string]any
		path   string
		why    string
	}{
		{"fs/remove", map[string]any{"path": userHome}, userHome, "it is a home directory (the user's or agentd's)"},
		{"fs/remove", map[string]any{"path": userHome + "/"}, userHome, "it is a home directory (the user's or agentd's)"},
		{"fs/remove", map[string]any{"path": filepath.Dir(userHome)}, filepath.Dir(userHome), "it contains a home directory (the user's or agentd's)"},
		{"fs/remove", map[string]any{"path": agentdHome, "recursive": false}, agentdHome, "it is a home directory (the user's or agentd's)"},
		{"fs/remove", map[string]any{"path": tmp}, tmp, "it contains a home directory (the user's or agentd's)"},
		{"fs/copy", map[string]any{"sourcePath": src, "destinationPath": userHome}, userHome, "it is a home directory (the user's or agentd's)"},
		{"fs/writeFile", map[string]any{"path": agentdHome, "dataBase64": ""}, agentdHome, "it is a home directory (the user's or agentd's)"},
	} {
		WantError(t, c.Call(tc.method, tc.params), codeInvalidRequest,
			fmt.Sprintf("%s refuses to remove or overwrite %s: %s", tc.method, tc.path, tc.why))
	}
	for _, d := range []string{userHome, agentdHome, src} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s is gone: %v", d, err)
		}
	}
	// Inside the homes, the client's requests are its own business.
	scratch := filepath.Join(userHome, "scratch")
	fsCall(t, c, "fs/createDirectory", map[string]any{"path": scratch}, nil)
	fsCall(t, c, "fs/remove", map[string]any{"path": scratch}, nil)
	if _, err := os.Stat(scratch); !os.IsNotExist(err) {
		t.Fatalf("scratch not removed: %v", err)
	}
}

// A large recursive fs/remove stops when its client disconnects, and the
// log says how far it got.
func TestFsRemoveStopsWhenTheClientLeaves(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "big")
	const dirs, files = 40, 100
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
	}
	d := Start(t, Options{Listen: []string{"ws://127.0.0.1:0"}})
	c := d.DialWS(WSOptions{})
	c.Initialize("leaver", nil)
	c.Request("fs/remove", map[string]any{"path": tree})
	c.Close()
	line := d.WaitLog(LogMsg("fs/remove stopped"))
	if line.Str("path") != tree {
		t.Fatalf("stopped log %v", line)
	}
	left := 0
	entries, err := os.ReadDir(tree)
	if err != nil {
		t.Fatalf("the whole tree is gone: %v", err)
	}
	for _, e := range entries {
		sub, _ := os.ReadDir(filepath.Join(tree, e.Name()))
		left += len(sub)
	}
	if left == 0 {
		t.Fatal("nothing left: the remove did not stop")
	}
}
