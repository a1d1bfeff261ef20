package policy

import (
	"reflect"
	"testing"
)

func TestParseCommandActions(t *testing.T) {
	cases := []struct {
		argv []string
		want []CommandAction
	}{
		{bashLC("echo hello-from-shell"), []CommandAction{{Kind: ActionUnknown, Command: "echo hello-from-shell"}}},
		{bashLC("for i in 1 2 3; do echo line$i; done; exit 3"),
			[]CommandAction{{Kind: ActionUnknown, Command: "for i in 1 2 3; do echo line$i; done; exit 3"}}},
		{bashLC("cat src/main.go"), []CommandAction{{Kind: ActionRead, Command: "cat src/main.go", Name: "main.go", Path: "src/main.go"}}},
		{bashLC("sed -n 1,80p core/doc.go"), []CommandAction{{Kind: ActionRead, Command: "sed -n 1,80p core/doc.go", Name: "doc.go", Path: "core/doc.go"}}},
		{bashLC("head -n 50 a.txt"), []CommandAction{{Kind: ActionRead, Command: "head -n 50 a.txt", Name: "a.txt", Path: "a.txt"}}},
		{bashLC("nl -ba x/y.go"), []CommandAction{{Kind: ActionRead, Command: "nl -ba x/y.go", Name: "y.go", Path: "x/y.go"}}},
		{bashLC("cat a b"), []CommandAction{{Kind: ActionUnknown, Command: "cat a b"}}},
		{bashLC("ls -la src"), []CommandAction{{Kind: ActionListFiles, Command: "ls -la src", Path: "src"}}},
		{bashLC("ls"), []CommandAction{{Kind: ActionListFiles, Command: "ls"}}},
		{bashLC("find . -name '*.go'"), []CommandAction{{Kind: ActionListFiles, Command: "find . -name '*.go'", Path: "."}}},
		{bashLC("rg --files core | head -n 20"), []CommandAction{{Kind: ActionListFiles, Command: "rg --files core", Path: "core"}}},
		{bashLC("tree -L 2 docs"), []CommandAction{{Kind: ActionListFiles, Command: "tree -L 2 docs", Path: "docs"}}},
		{bashLC("rg -n 'func main' cmd"), []CommandAction{{Kind: ActionSearch, Command: "rg -n 'func main' cmd", Query: "func main", Path: "cmd"}}},
		{bashLC("grep -rn -e TODO ."), []CommandAction{{Kind: ActionSearch, Command: "grep -rn -e TODO .", Query: "TODO", Path: "."}}},
		{bashLC("rg -g '*.go' Handler"), []CommandAction{{Kind: ActionSearch, Command: "rg -g '*.go' Handler", Query: "Handler"}}},
		{bashLC("cd core && rg foo | wc -l"), []CommandAction{{Kind: ActionSearch, Command: "rg foo", Query: "foo"}}},
		{bashLC("cat a.go && ls b"), []CommandAction{
			{Kind: ActionRead, Command: "cat a.go", Name: "a.go", Path: "a.go"},
			{Kind: ActionListFiles, Command: "ls b", Path: "b"},
		}},
		{bashLC("cat a.go && rm b"), []CommandAction{{Kind: ActionUnknown, Command: "cat a.go && rm b"}}},
		{bashLC("cd x"), []CommandAction{{Kind: ActionUnknown, Command: "cd x"}}},
		{[]string{"cat", "my file.txt"}, []CommandAction{{Kind: ActionRead, Command: "cat 'my file.txt'", Name: "my file.txt", Path: "my file.txt"}}},
		{[]string{"make", "test"}, []CommandAction{{Kind: ActionUnknown, Command: "make test"}}},
		{nil, []CommandAction{{Kind: ActionUnknown}}},
	}
	for _, c := range cases {
		got := ParseCommandActions(c.argv)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseCommandActions(%q)\n got %+v\nwant %+v", c.argv, got, c.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	cases := []struct {
		argv []string
		want string
	}{
		{[]string{"/bin/bash", "-lc", "echo hello-from-shell"}, "/bin/bash -lc 'echo hello-from-shell'"},
		{[]string{"/bin/bash", "-lc", "for i in 1 2 3; do echo line$i; sleep 0.3; done; echo err >&2; exit 3"},
			"/bin/bash -lc 'for i in 1 2 3; do echo line$i; sleep 0.3; done; echo err >&2; exit 3'"},
		{[]string{"echo", "it's"}, `echo 'it'\''s'`},
		{[]string{"ls", ""}, "ls ''"},
		{[]string{"git", "log", "--format=%H@x,y:z+1"}, "git log --format=%H@x,y:z+1"},
		{[]string{"a*b", "c d", "$x"}, "'a*b' 'c d' '$x'"},
	}
	for _, c := range cases {
		if got := ShellQuote(c.argv); got != c.want {
			t.Errorf("ShellQuote(%q) = %s, want %s", c.argv, got, c.want)
		}
	}
}

func TestProposeAmendment(t *testing.T) {
	cases := []struct {
		argv, want []string
	}{
		// Both shapes seen from the reference server.
		{bashLC("echo hello-from-shell"), []string{"echo", "hello-from-shell"}},
		{bashLC("for i in 1 2 3; do echo line$i; done; exit 3"), bashLC("for i in 1 2 3; do echo line$i; done; exit 3")},
		{bashLC("make test && make lint"), bashLC("make test && make lint")},
		{[]string{"make", "test"}, []string{"make", "test"}},
		{bashLC("cargo 'build x'"), []string{"cargo", "build x"}},
		{nil, nil},
	}
	for _, c := range cases {
		if got := ProposeAmendment(c.argv); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ProposeAmendment(%q) = %q, want %q", c.argv, got, c.want)
		}
	}
}
