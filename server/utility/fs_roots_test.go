package utility

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/protocol"
)

// The fs roots are tested as a function over paths, in a temporary tree:
// nothing here writes outside it.
func TestFsRootsAllows(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(tmp, "a")
	outside := filepath.Join(tmp, "outside")
	for _, d := range []string{filepath.Join(root, "sub"), outside, filepath.Join(tmp, "ab")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		filepath.Join(root, "link-out"):     outside,
		filepath.Join(root, "link-in"):      filepath.Join(root, "sub"),
		filepath.Join(root, "rel-up"):       "../outside",
		filepath.Join(root, "rel-in"):       "sub/file",
		filepath.Join(root, "dangling-out"): filepath.Join(outside, "new"),
		filepath.Join(root, "dangling-in"):  "sub/new",
		filepath.Join(root, "loop1"):        "loop2",
		filepath.Join(root, "loop2"):        "loop1",
		filepath.Join(root, "to-root"):      "/",
		filepath.Join(tmp, "link-to-a"):     root,
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	r := fsRoots{roots: []string{root}}
	j := func(elems ...string) string { return strings.Join(elems, "/") }
	for _, tc := range []struct {
		path    string
		follow  bool
		allowed bool
	}{
		{root, true, true},
		{root, false, true},
		{root + "/", true, true},
		{j(root, "sub", "file"), true, true},
		{j(root, "sub", ".", "file"), true, true},
		{j(root, "new", "deeper", "x"), true, true},
		{j(root, "sub", "file", "x"), true, true}, // not a directory: fails later, inside
		{j(root, "sub", "..", "sub", "file"), true, true},
		{j(root, "missing", "..", "sub"), true, true},
		{j(root, "link-in", "file"), true, true},
		{j(root, "link-in", "..", "sub"), true, true},
		{j(root, "rel-in"), true, true},
		{j(root, "dangling-in"), true, true},
		{j(tmp, "link-to-a", "sub"), true, true},
		// A link itself, removed rather than followed.
		{j(root, "link-out"), false, true},
		{j(root, "dangling-out"), false, true},
		{j(root, "to-root"), false, true},

		{"/", true, false},
		{tmp, true, false},
		{j(tmp, "ab"), true, false},
		{j(tmp, "ab", "x"), true, false},
		{j(tmp, "a", "..", "ab"), true, false},
		{j(root, ".."), true, false},
		{j(root, "sub", "..", ".."), false, false},
		{j(root, "missing", "..", "..", "outside", "x"), true, false},
		{j(root, "missing", "..", "..", "outside", "x"), false, false},
		{j(root, "link-out"), true, false},
		{j(root, "link-out") + "/", false, false},
		{j(root, "link-out", "x"), false, false},
		{j(root, "link-out", "x"), true, false},
		{j(root, "sub", "..", "link-out", "x"), true, false},
		{j(root, "link-in", "..", "..", "outside"), true, false},
		{j(root, "rel-up", "x"), true, false},
		{j(root, "dangling-out"), true, false},
		{j(root, "to-root", "etc"), false, false},
		{j(root, "to-root", "etc"), true, false},
		{j(root, "loop1"), true, false},
		{j(root, "loop1", "x"), false, false},
		{"/etc/passwd", true, false},
		{j(root, "..", "..", "..", "..", "..", "..", "etc"), true, false},
	} {
		ok, err := r.allows(tc.path, tc.follow)
		if ok != tc.allowed {
			t.Errorf("allows(%s, follow %v) = %v (%v), want %v", tc.path, tc.follow, ok, err, tc.allowed)
		}
		if cerr := r.check("fs/x", tc.path, tc.follow); (cerr == nil) != tc.allowed {
			t.Errorf("check(%s, follow %v) = %v", tc.path, tc.follow, cerr)
		}
	}
	if _, err := resolvePath(j(root, "loop1"), true); !errors.Is(err, errTooManyLinks) {
		t.Errorf("a loop resolves with %v", err)
	}

	// Without roots, nothing is refused (and nothing is looked up).
	for _, p := range []string{"/", "/etc/passwd", j(root, "loop1")} {
		if err := (fsRoots{}).check("fs/x", p, true); err != nil {
			t.Errorf("no roots: %s refused: %v", p, err)
		}
	}
	// Several roots, and "/" as one.
	two := fsRoots{roots: []string{root, outside}}
	if ok, _ := two.allows(j(root, "link-out", "x"), true); !ok {
		t.Error("a link from one root into another is refused")
	}
	if ok, _ := (fsRoots{roots: []string{"/"}}).allows("/etc/passwd", true); !ok {
		t.Error(`root "/" refuses /etc/passwd`)
	}
}

// A refusal is -32600 naming the method and the path, cut when long.
func TestFsRootsRefusal(t *testing.T) {
	r := fsRoots{roots: []string{t.TempDir()}}
	var perr *protocol.Error
	if err := r.check("fs/readFile", "/etc/passwd", true); !errors.As(err, &perr) ||
		perr.Code != protocol.CodeInvalidRequest || perr.Message != "fs/readFile refuses /etc/passwd: it is outside the fs roots" {
		t.Fatalf("refusal %v", err)
	}
	long := "/" + strings.Repeat("éé/", 150) + "tail.txt"
	err := r.check("fs/readFile", long, true)
	if !errors.As(err, &perr) || len(perr.Message) > 400 || !strings.HasSuffix(perr.Message, " bytes in all]: it is outside the fs roots") ||
		!strings.Contains(perr.Message, protocol.CutMarker) {
		t.Fatalf("long path refusal %v", err)
	}
	if !utf8.ValidString(perr.Message) {
		t.Fatalf("the cut broke a character: %q", perr.Message)
	}
}
