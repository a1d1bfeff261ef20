package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type fuzzyFile struct {
	Root      string   `json:"root"`
	Path      string   `json:"path"`
	MatchType string   `json:"match_type"`
	FileName  string   `json:"file_name"`
	Score     uint32   `json:"score"`
	Indices   []uint32 `json:"indices"`
}

func TestFuzzyFileSearch(t *testing.T) {
	_, c := utilClient(t, Options{})
	root := t.TempDir()
	for path, content := range map[string]string{
		"a/f.txt":               "",
		"a/b/deep/for-test.txt": "",
		"docs/readme.md":        "",
		".gitignore":            "node_modules/\n*.log\n!keep.log\n# comment\n/only-root.txt\n",
		"node_modules/x/f.txt":  "",
		".git/ftxt":             "",
		"build.log":             "",
		"keep.log":              "",
		"only-root.txt":         "",
		"a/only-root.txt":       "",
		"a/.gitignore":          "*.tmp\n",
		"a/scratch.tmp":         "",
	} {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	search := func(query string) []fuzzyFile {
		t.Helper()
		var r struct {
			Files []fuzzyFile `json:"files"`
		}
		validResult(t, "fuzzyFileSearch", c.Call("fuzzyFileSearch", map[string]any{"query": query, "roots": []string{root}}), &r)
		return r.Files
	}
	paths := func(files []fuzzyFile) string {
		var out []string
		for _, f := range files {
			out = append(out, f.Path)
		}
		return strings.Join(out, ",")
	}

	files := search("ftxt")
	if len(files) == 0 {
		t.Fatal("no match")
	}
	got := files[0]
	if got.Root != root || got.Path != "a/f.txt" || got.MatchType != "file" || got.FileName != "f.txt" ||
		len(got.Indices) != 4 || got.Indices[0] != 2 || got.Indices[3] != 6 {
		t.Fatalf("best match %+v", got)
	}
	for i := 1; i < len(files); i++ {
		if files[i].Score > files[i-1].Score {
			t.Fatalf("not sorted by score: %s", paths(files))
		}
	}
	if p := paths(files); strings.Contains(p, "node_modules") || strings.Contains(p, ".git/") {
		t.Fatalf("ignored paths found: %s", p)
	}
	if p := paths(search("log")); !strings.Contains(p, "keep.log") || strings.Contains(p, "build.log") {
		t.Fatalf("log matches: %s", p)
	}
	if p := paths(search("onlyroot")); p != "a/only-root.txt" {
		t.Fatalf("anchored pattern: %s", p)
	}
	if p := paths(search("scratch")); p != "" {
		t.Fatalf("nested .gitignore ignored: %s", p)
	}
	if files := search("docs"); len(files) == 0 || files[0].Path != "docs" || files[0].MatchType != "directory" {
		t.Fatalf("directory match: %+v", files)
	}
	if files := search(""); len(files) != 0 {
		t.Fatalf("empty query: %+v", files)
	}
	// A missing root gives nothing, not an error.
	var r struct {
		Files []fuzzyFile `json:"files"`
	}
	validResult(t, "fuzzyFileSearch", c.Call("fuzzyFileSearch", map[string]any{"query": "x", "roots": []string{filepath.Join(root, "nope")}, "cancellationToken": "t1"}), &r)
	if len(r.Files) != 0 {
		t.Fatalf("missing root: %+v", r.Files)
	}
}
