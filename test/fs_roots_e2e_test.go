package test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// [fs] roots confine every fs/* method, fuzzyFileSearch and command/exec's
// cwd to the root's tree, links resolved; the destroy guard still applies
// inside it. Every path is in the test's temporary tree, and the paths
// outside the root that requests name are the test's own too.
func TestFsRootsConfineRequests(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(tmp, "work")
	outside := filepath.Join(tmp, "outside")
	userHome := filepath.Join(root, "home")
	for _, d := range []string{root, outside, userHome, filepath.Join(tmp, "workshop")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	escape := filepath.Join(root, "escape")
	if err := os.Symlink(outside, escape); err != nil {
		t.Fatal(err)
	}
	d := Start(t, Options{ConfigTOML: fmt.Sprintf("[fs]\nroots = [%q]\n", root), Env: []string{"HOME=" + userHome}})
	c := d.Stdio()
	c.Initialize("roots", nil)
	in := func(rel string) string { return filepath.Join(root, rel) }

	refused := func(method, path string, params map[string]any) {
		t.Helper()
		WantError(t, c.Call(method, params), codeInvalidRequest, method+" refuses "+path+": it is outside the fs roots")
	}
	refused("fs/readFile", secret, map[string]any{"path": secret})
	refused("fs/readFile", in("escape/secret.txt"), map[string]any{"path": in("escape/secret.txt")})
	refused("fs/getMetadata", escape, map[string]any{"path": escape})
	refused("fs/readDirectory", root+"/..", map[string]any{"path": root + "/.."})
	refused("fs/readDirectory", filepath.Join(tmp, "workshop"), map[string]any{"path": filepath.Join(tmp, "workshop")})
	refused("fs/watch", outside, map[string]any{"watchId": "w", "path": outside})
	refused("fs/writeFile", filepath.Join(outside, "new.txt"), map[string]any{"path": filepath.Join(outside, "new.txt"), "dataBase64": b64("x")})
	refused("fs/writeFile", in("escape/new.txt"), map[string]any{"path": in("escape/new.txt"), "dataBase64": b64("x")})
	// Not cleaned: the missing parents are made one by one, and ".." then
	// climbs out of them.
	climb := root + "/missing/../../outside/made"
	refused("fs/createDirectory", climb, map[string]any{"path": climb})
	refused("fs/remove", secret, map[string]any{"path": secret})
	refused("fs/copy", secret, map[string]any{"sourcePath": secret, "destinationPath": in("copy.txt")})
	refused("fs/copy", filepath.Join(outside, "copy"), map[string]any{"sourcePath": userHome, "destinationPath": filepath.Join(outside, "copy"), "recursive": true})
	refused("fuzzyFileSearch", outside, map[string]any{"query": "secret", "roots": []string{outside}})
	refused("command/exec", outside, map[string]any{"command": []string{"true"}, "cwd": outside})
	// Without a cwd, a command runs in the daemon's directory: not in the
	// root either.
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	refused("command/exec", cwd, map[string]any{"command": []string{"true"}})
	for _, p := range []string{filepath.Join(outside, "new.txt"), filepath.Join(outside, "made"), filepath.Join(outside, "copy"), in("copy.txt")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s was made: %v", p, err)
		}
	}
	if data, err := os.ReadFile(secret); err != nil || string(data) != "outside" {
		t.Fatalf("the file outside: %q, %v", data, err)
	}

	// Inside the root, everything works as before.
	fsCall(t, c, "fs/createDirectory", map[string]any{"path": in("a/b")}, nil)
	fsCall(t, c, "fs/writeFile", map[string]any{"path": in("a/f.txt"), "dataBase64": b64("inside")}, nil)
	var read struct{ DataBase64 string }
	fsCall(t, c, "fs/readFile", map[string]any{"path": in("a/f.txt")}, &read)
	if got, _ := base64.StdEncoding.DecodeString(read.DataBase64); string(got) != "inside" {
		t.Fatalf("read %q", got)
	}
	fsCall(t, c, "fs/copy", map[string]any{"sourcePath": in("a"), "destinationPath": in("c"), "recursive": true}, nil)
	fsCall(t, c, "fs/getMetadata", map[string]any{"path": root}, nil)
	fsCall(t, c, "fs/readDirectory", map[string]any{"path": in("c")}, nil)
	fsCall(t, c, "fs/watch", map[string]any{"watchId": "in", "path": in("c")}, nil)
	fsCall(t, c, "fuzzyFileSearch", map[string]any{"query": "f", "roots": []string{root}}, nil)
	var run struct {
		ExitCode int
		Stdout   string
	}
	fsCall(t, c, "command/exec", map[string]any{"command": []string{"pwd"}, "cwd": in("a"), "sandboxPolicy": noSandbox}, &run)
	if run.ExitCode != 0 || strings.TrimSpace(run.Stdout) != in("a") {
		t.Fatalf("pwd in the root: %+v", run)
	}
	fsCall(t, c, "fs/remove", map[string]any{"path": in("a")}, nil)
	// A link in the root is removed itself: what it points to stays.
	fsCall(t, c, "fs/remove", map[string]any{"path": escape}, nil)
	if _, err := os.Lstat(escape); !os.IsNotExist(err) {
		t.Fatalf("the link is still there: %v", err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatalf("the link's target went with it: %v", err)
	}
	// The destroy guard still applies inside the roots.
	WantError(t, c.Call("fs/remove", map[string]any{"path": userHome}), codeInvalidRequest,
		"fs/remove refuses to remove or overwrite "+userHome+": it is a home directory (the user's or agentd's)")
	if _, err := os.Stat(userHome); err != nil {
		t.Fatalf("the home is gone: %v", err)
	}
}

// --fs-root replaces [fs] roots; a relative or missing root stops the
// daemon at startup with an error naming it.
func TestFsRootFlag(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	configured, flagged := filepath.Join(tmp, "configured"), filepath.Join(tmp, "flagged")
	for _, d := range []string{configured, flagged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := Start(t, Options{ConfigTOML: fmt.Sprintf("[fs]\nroots = [%q]\n", configured), Args: []string{"--fs-root", flagged}})
	c := d.Stdio()
	c.Initialize("roots", nil)
	fsCall(t, c, "fs/readDirectory", map[string]any{"path": flagged}, nil)
	WantError(t, c.Call("fs/readDirectory", map[string]any{"path": configured}), codeInvalidRequest,
		"fs/readDirectory refuses "+configured+": it is outside the fs roots")
	d.WaitLog(func(l LogLine) bool {
		return l.Msg == "fs/* and command/exec are confined to the fs roots" && strings.Contains(l.Raw, flagged)
	})

	for _, tc := range []struct{ arg, want string }{
		{"relative/dir", `--fs-root: "relative/dir" is not an absolute path`},
		{filepath.Join(tmp, "missing"), fmt.Sprintf("--fs-root: %q does not exist", filepath.Join(tmp, "missing"))},
	} {
		d := Start(t, Options{Args: []string{"--fs-root", tc.arg}, NoWait: true})
		if code := d.Wait(); code == 0 || !strings.Contains(d.Stderr(), tc.want) {
			t.Fatalf("--fs-root %s: exit %d, stderr:\n%s", tc.arg, code, d.Stderr())
		}
	}
}

// A recursive fs/copy merged into an existing destination inside the root
// does not write through links already in it to places outside the root:
// the copy is refused, naming the link, and the files outside keep their
// bytes. Every path is in the test's temporary tree.
func TestFsCopyDoesNotFollowLinksInTheDestination(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, outside := filepath.Join(tmp, "work"), filepath.Join(tmp, "outside")
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, path string) {
		t.Helper()
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "src", "sub", "f.txt"), "copied")
	write(filepath.Join(root, "src2", "g.txt"), "copied")
	write(filepath.Join(outside, "d", "f.txt"), "outside")
	write(filepath.Join(outside, "g.txt"), "outside")
	if err := os.MkdirAll(filepath.Join(root, "dst"), 0o755); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(outside, "d"), filepath.Join(root, "dst", "sub"))
	link(filepath.Join(outside, "g.txt"), filepath.Join(root, "dst", "g.txt"))

	d := Start(t, Options{Args: []string{"--fs-root", root}})
	c := d.Stdio()
	c.Initialize("roots", nil)
	for _, src := range []string{"src", "src2"} {
		via := filepath.Join(root, "dst", "sub")
		if src == "src2" {
			via = filepath.Join(root, "dst", "g.txt")
		}
		WantError(t, c.Call("fs/copy", map[string]any{"sourcePath": filepath.Join(root, src), "destinationPath": filepath.Join(root, "dst"), "recursive": true}),
			codeInvalidRequest, "fs/copy will not write through the symbolic link "+via+" in the destination")
	}
	for _, p := range []string{filepath.Join(outside, "d", "f.txt"), filepath.Join(outside, "g.txt")} {
		if data, err := os.ReadFile(p); err != nil || string(data) != "outside" {
			t.Fatalf("%s outside the root: %q, %v", p, data, err)
		}
	}
}
