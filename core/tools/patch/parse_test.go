package patch

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []Op
	}{
		{
			name: "add file",
			text: "*** Begin Patch\n*** Add File: hello.txt\n+hello world\n*** End Patch\n",
			want: []Op{{Kind: KindAdd, Path: "hello.txt", Content: "hello world\n", Line: 2}},
		},
		{
			name: "no final newline, CRLF, surrounding whitespace",
			text: "\n  \r\n*** Begin Patch\r\n*** Add File: a.txt\r\n+x\r\n*** End Patch  ",
			want: []Op{{Kind: KindAdd, Path: "a.txt", Content: "x\n", Line: 4}},
		},
		{
			name: "heredoc wrapper",
			text: "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: old.txt\n*** End Patch\nEOF\n",
			want: []Op{{Kind: KindDelete, Path: "old.txt", Line: 3}},
		},
		{
			name: "bare heredoc with double quotes",
			text: "<<\"PATCH\"\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nPATCH",
			want: []Op{{Kind: KindDelete, Path: "a", Line: 3}},
		},
		{
			name: "function arguments sent to the freeform tool",
			text: ` {"input": "*** Begin Patch\n*** Delete File: a\n*** End Patch"}`,
			want: []Op{{Kind: KindDelete, Path: "a", Line: 2}},
		},
		{
			name: "code fence",
			text: "```diff\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n```\n",
			want: []Op{{Kind: KindDelete, Path: "a", Line: 3}},
		},
		{
			name: "empty added file and blank lines inside added content",
			text: "*** Begin Patch\n*** Add File: empty\n*** Add File: b\n+one\n\n+three\n\n*** End Patch",
			want: []Op{
				{Kind: KindAdd, Path: "empty", Content: "", Line: 2},
				{Kind: KindAdd, Path: "b", Content: "one\n\nthree\n", Line: 3},
			},
		},
		{
			name: "update with anchors, move, eof",
			text: strings.Join([]string{
				"*** Begin Patch",
				"*** Update File: src/a.go",
				"*** Move to: src/b.go",
				"@@ func a() {",
				"@@ if x {",
				" \tkeep",
				"-\told",
				"+\tnew",
				"@@",
				" last",
				"+appended",
				"*** End of File",
				"*** End Patch",
			}, "\n"),
			want: []Op{{Kind: KindUpdate, Path: "src/a.go", MoveTo: "src/b.go", Line: 2, Hunks: []Hunk{
				{Anchors: []string{"func a() {", "if x {"}, Line: 4, Lines: []HunkLine{{' ', "\tkeep"}, {'-', "\told"}, {'+', "\tnew"}}},
				{Line: 9, EOF: true, Lines: []HunkLine{{' ', "last"}, {'+', "appended"}}},
			}}},
		},
		{
			name: "first hunk without @@, blank context line without its space, trailing blanks dropped",
			text: "*** Begin Patch\n*** Update File: a\n x\n\n-y\n+z\n\n\n*** End Patch\n",
			want: []Op{{Kind: KindUpdate, Path: "a", Line: 2, Hunks: []Hunk{
				{Line: 3, Lines: []HunkLine{{' ', "x"}, {' ', ""}, {'-', "y"}, {'+', "z"}}},
			}}},
		},
		{
			name: "unified range header keeps its trailing context as anchor",
			text: "*** Begin Patch\n*** Update File: a\n@@ -10,3 +10,4 @@ func f()\n-a\n+b\n@@ -20 +21 @@\n-c\n*** End Patch",
			want: []Op{{Kind: KindUpdate, Path: "a", Line: 2, Hunks: []Hunk{
				{Anchors: []string{"func f()"}, Line: 3, Lines: []HunkLine{{'-', "a"}, {'+', "b"}}},
				{Line: 6, Lines: []HunkLine{{'-', "c"}}},
			}}},
		},
		{
			name: "pure rename",
			text: "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch",
			want: []Op{{Kind: KindUpdate, Path: "a", MoveTo: "b", Line: 2}},
		},
		{
			name: "absolute path, spaces trimmed, blank before end-of-file marker kept",
			text: "*** Begin Patch\n*** Update File:   /tmp/x y.txt  \n@@\n a\n\n*** End of File\n*** End Patch",
			want: []Op{{Kind: KindUpdate, Path: "/tmp/x y.txt", Line: 2, Hunks: []Hunk{
				{Line: 3, EOF: true, Lines: []HunkLine{{' ', "a"}, {' ', ""}}},
			}}},
		},
		{
			name: "added line that looks like a marker",
			text: "*** Begin Patch\n*** Add File: a\n+*** End Patch\n*** End Patch",
			want: []Op{{Kind: KindAdd, Path: "a", Content: "*** End Patch\n", Line: 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.text)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, p.Ops); diff != "" {
				t.Errorf("ops (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name string
		text string
		line int
		msg  string
	}{
		{"empty", "", 1, "expected '*** Begin Patch', found end of input"},
		{"no begin", "hello\n*** Begin Patch", 1, "expected '*** Begin Patch', found 'hello'"},
		{"junk instead of op", "*** Begin Patch\n*** Add File: a\nfoo\n", 3,
			"expected a line starting with '+' (content of added file 'a'), found 'foo'"},
		{"not an op", "*** Begin Patch\n\nfoo\n*** End Patch", 3,
			"expected '*** Add File:', '*** Delete File:' or '*** Update File:', found 'foo'"},
		{"no ops", "*** Begin Patch\n*** End Patch\n", 2,
			"expected '*** Add File:', '*** Delete File:' or '*** Update File:', found '*** End Patch' (the patch changes no file)"},
		{"no ops, end of input", "*** Begin Patch\n", 2,
			"expected '*** Add File:', '*** Delete File:' or '*** Update File:', found end of input"},
		{"no end", "*** Begin Patch\n*** Add File: a\n+x\n", 4, "expected '*** End Patch', found end of input"},
		{"empty add path", "*** Begin Patch\n*** Add File:   \n+x\n*** End Patch", 2, "empty path after '*** Add File:'"},
		{"empty update path", "*** Begin Patch\n*** Update File:\n*** End Patch", 2, "empty path after '*** Update File:'"},
		{"empty move path", "*** Begin Patch\n*** Update File: a\n*** Move to: \n-x\n*** End Patch", 3, "empty path after '*** Move to:'"},
		{"NUL in path", "*** Begin Patch\n*** Delete File: a\x00b\n*** End Patch", 2, "contains a NUL byte"},
		{"delete with lines", "*** Begin Patch\n*** Delete File: a\n-x\n*** End Patch", 3,
			"'*** Delete File:' takes no lines: expected the next file operation or '*** End Patch', found '-x'"},
		{"bad hunk line", "*** Begin Patch\n*** Update File: a\n@@\n x\nfoo\n*** End Patch", 5,
			"expected a hunk line starting with ' ', '-' or '+', an '@@' header or '*** End of File' in the update of 'a', found 'foo'"},
		{"update without hunks", "*** Begin Patch\n*** Update File: a\n\n*** End Patch", 2,
			"'*** Update File: a' has no hunks"},
		{"header without lines", "*** Begin Patch\n*** Update File: a\n@@ foo\n*** End Patch", 3,
			"'@@' header without hunk lines after it in the update of 'a'"},
		{"eof without hunk", "*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch", 3,
			"'*** End of File' must follow the lines of a hunk"},
		{"lines after eof", "*** Begin Patch\n*** Update File: a\n-x\n*** End of File\n+y\n*** End Patch", 5,
			"expected '@@' to start a new hunk after '*** End of File', found '+y'"},
		{"late move", "*** Begin Patch\n*** Update File: a\n-x\n*** Move to: b\n*** End Patch", 4,
			"'*** Move to:' must come right after '*** Update File: a'"},
		{"text after end", "*** Begin Patch\n*** Delete File: a\n*** End Patch\nthanks!\n", 4,
			"unexpected text after '*** End Patch': 'thanks!'"},
		{"heredoc line numbers", "<<'EOF'\n*** Begin Patch\n*** Update File: a\n?x\n*** End Patch\nEOF", 4,
			"found '?x'"},
		{"wrong heredoc closer", "<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEND\n", 5,
			"unexpected text after '*** End Patch': 'END'"},
		{"long line shortened", "*** Begin Patch\n" + strings.Repeat("é", 100), 2, "found '" + strings.Repeat("é", 40) + "…'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error = %v, want a *ParseError", err)
			}
			if !errors.Is(err, ErrInvalidPatch) {
				t.Errorf("errors.Is(err, ErrInvalidPatch) = false")
			}
			if pe.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", pe.Line, tt.line, err)
			}
			if !strings.Contains(pe.Msg, tt.msg) {
				t.Errorf("message = %q, want it to contain %q", pe.Msg, tt.msg)
			}
			if want := "invalid patch: line "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Error() = %q, want prefix %q", err.Error(), want)
			}
		})
	}
}
