package configedit

import (
	"testing"
)

// MergeTable appends a table the file lacks under its own header, keeping
// the text before it as it is; a key of the path may hold dots and
// quotes. A table the file has already gets the values merged into it
// in place; the result always parses back to the intended document.
func TestMergeTable(t *testing.T) {
	trusted := map[string]any{"trust_level": "trusted"}
	for _, tc := range []struct {
		name, src string
		path      []string
		want      string
	}{
		{"appended after comments", "# top\nmodel = \"x\" # c\n\n[server]\nmax_inflight = 3\n", []string{"projects", "/srv/a.b"},
			"# top\nmodel = \"x\" # c\n\n[server]\nmax_inflight = 3\n\n[projects.\"/srv/a.b\"]\ntrust_level = \"trusted\"\n"},
		{"no final newline", "model = \"x\"", []string{"projects", `/srv/q"uote`},
			"model = \"x\"\n\n[projects.\"/srv/q\\\"uote\"]\ntrust_level = \"trusted\"\n"},
		{"empty file", "", []string{"projects", "/r"}, "[projects.\"/r\"]\ntrust_level = \"trusted\"\n"},
		{"beside another project", "[projects.\"/a\"]\ntrust_level = \"untrusted\"\n", []string{"projects", "/r"},
			"[projects.\"/a\"]\ntrust_level = \"untrusted\"\n\n[projects.\"/r\"]\ntrust_level = \"trusted\"\n"},
		{"into the table it has", "[projects.\"/r\"]\nfoo = 1\n[other]\nx = 1\n", []string{"projects", "/r"},
			"[projects.\"/r\"]\nfoo = 1\ntrust_level = \"trusted\"\n[other]\nx = 1\n"},
	} {
		res, err := MergeTable([]byte(tc.src), tc.path, trusted)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(res.Text) != tc.want || !res.InPlace {
			t.Fatalf("%s: in place %v\n%s\nwant:\n%s", tc.name, res.InPlace, res.Text, tc.want)
		}
		got, err := Parse(res.Text)
		if err != nil || !Equal(got, res.Doc) || res.Version != Version(got) {
			t.Fatalf("%s: the text does not parse back to the result's document: %v", tc.name, err)
		}
	}
	// A path through a value that is not a table is refused.
	if _, err := MergeTable([]byte("projects = 1\n"), []string{"projects", "/r"}, trusted); err == nil {
		t.Fatal("merged into a non-table")
	}
}
