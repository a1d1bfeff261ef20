package policy

import "testing"

func bashLC(script string) []string { return []string{"/bin/bash", "-lc", script} }

func TestIsKnownSafe(t *testing.T) {
	safe := []string{
		"ls",
		"ls -la",
		"ls -la src/",
		"ls *.go",
		"cat README.md",
		"cat 'a file.txt'",
		`cat "a file.txt"`,
		"head -n 20 main.go",
		"tail -f log.txt",
		"wc -l *.go",
		"grep -rn foo .",
		"grep -rn 'foo bar' src | head -n 5",
		"rg foo",
		"rg -n --hidden 'func main' cmd/",
		"rg --files",
		"rg -g '*.go' foo",
		"find . -name '*.go'",
		"find . -type f -newer x -print",
		"find ./* -maxdepth 1",
		"git status",
		"git status --short",
		"git log --oneline -n 5",
		"git diff HEAD~1 -- main.go",
		"git show HEAD:main.go",
		"git branch",
		"git branch -a -v",
		"git branch --list 'feat/*'",
		"git branch --show-current",
		"git branch --contains HEAD",
		"git -C sub status",
		"git --no-pager log",
		"pwd",
		"echo hello",
		"echo hello && echo world",
		"true || false",
		"nl -ba main.go",
		"sed -n 1,80p main.go",
		"sed -n 5p main.go",
		"sed -n '10,$p' main.go",
		"which go",
		"stat main.go",
		"file main.go",
		"tree -L 2",
		"du -sh .",
		"df -h",
		"uname -a",
		"whoami",
		"date",
		"date +%Y-%m-%d",
		"date -u -Iseconds",
		"sort names.txt | uniq -c",
		"sort -n -k2 data.txt",
		"uniq names.txt",
		"cut -d: -f1 /etc/passwd",
		"tr a-z A-Z < in.txt",
		"diff a.txt b.txt",
		"cmp a b",
		"basename /a/b.go",
		"dirname /a/b.go",
		"realpath .",
		"readlink -f x",
		"env",
		"cd src && ls",
		"(cd src && ls)",
		"{ ls; pwd; }",
		"ls 2>/dev/null",
		"grep foo x.txt >/dev/null 2>&1",
		"ls &>/dev/null",
		"cat x | grep y | wc -l",
		"! grep -q foo x",
		"ls; pwd",
		"/bin/ls -l",
		"/usr/bin/git status",
		"cat foo\\ bar",
		"echo 'a;b' \"c|d\"",
		"ls src/*.go",
	}
	unsafe := []string{
		"",
		"rm -rf /",
		"touch x",
		"echo hi > out.txt",
		"echo hi >> out.txt",
		"cat x > y",
		"ls >&out.txt",
		"ls &> out.txt",
		"cat <> x",
		"cat <<EOF\nhi\nEOF",
		"echo $(rm -rf x)",
		"echo `id`",
		"cat <(ls)",
		"echo $HOME",
		"echo \"$HOME\"",
		"FOO=bar ls",
		"FOO=bar",
		"ls &",
		"ls & pwd",
		"for f in a b; do cat $f; done",
		"if true; then ls; fi",
		"find . -delete",
		"find . -name x -exec rm {} ;",
		"find . -execdir ls ;",
		"find . -ok rm {} ;",
		"find . -fprint out",
		"find . -fls out",
		"find * -name x",
		"rg --pre cat foo",
		"rg --pre=cat foo",
		"rg -z foo",
		"rg -iz foo",
		"rg --search-zip foo",
		"rg --hostname-bin x foo",
		"git commit -m x",
		"git push",
		"git checkout main",
		"git branch new-branch",
		"git branch -d old",
		"git branch -D old",
		"git branch -m a b",
		"git branch --set-upstream-to=origin/main",
		"git -c core.pager=evil log",
		"git diff --output=x",
		"git log --output x",
		"git diff --ext-diff",
		"git show --textconv HEAD",
		"git",
		"sed -i s/a/b/ x",
		"sed s/a/b/ x",
		"sed -n 1w out x",
		"sed -n 1p -i x",
		"sort -o out in",
		"sort --output=out in",
		"sort --compress-program=sh in",
		"uniq in out",
		"tree -o out",
		"file -C -m magic",
		"date -s 2020-01-01",
		"date --set=2020-01-01",
		"date 010100002020",
		"env rm x",
		"env FOO=1 ls",
		"xargs rm",
		"python3 -c 'print(1)'",
		"./ls",
		"/tmp/ls",
		"l* -la",
		"$(echo ls)",
		"ls | xargs rm",
		"ls && rm x",
		"cat x | sh",
		"bash -c ls",
		"time ls",
		"ls 3>x",
		"exec ls",
		"cat $'x'",
		"ls @(a|b)",
		"echo ${x:-y}",
		"echo $((1+2))",
		"coproc ls",
		"f() { ls; }; f",
		"{x}>/dev/null ls",
		"find {-delete,}",
	}
	for _, s := range safe {
		if !IsKnownSafe(bashLC(s)) {
			t.Errorf("IsKnownSafe(bash -lc %q) = false, want true", s)
		}
	}
	for _, s := range unsafe {
		if IsKnownSafe(bashLC(s)) {
			t.Errorf("IsKnownSafe(bash -lc %q) = true, want false", s)
		}
	}
}

func TestIsKnownSafeDirectArgv(t *testing.T) {
	cases := []struct {
		argv []string
		want bool
	}{
		{[]string{"ls", "-la"}, true},
		{[]string{"cat", "$(rm -rf x)"}, true}, // no shell: a literal file name
		{[]string{"find", ".", "-delete"}, false},
		{[]string{"rm", "x"}, false},
		{[]string{"sh", "-c", "ls"}, true},
		{[]string{"zsh", "-lc", "git status"}, true},
		{[]string{"bash", "-lc", "rm x"}, false},
		{[]string{"bash", "-x", "-c", "ls"}, false},
		{[]string{"bash", "-lc"}, false},
		{nil, false},
		{[]string{"git", "-C"}, false},
	}
	for _, c := range cases {
		if got := IsKnownSafe(c.argv); got != c.want {
			t.Errorf("IsKnownSafe(%q) = %t, want %t", c.argv, got, c.want)
		}
	}
}

func BenchmarkIsKnownSafe(b *testing.B) {
	argv := bashLC("git status && rg -n 'func main' cmd/ | head -n 20")
	b.ReportAllocs()
	for b.Loop() {
		if !IsKnownSafe(argv) {
			b.Fatal("want safe")
		}
	}
}
