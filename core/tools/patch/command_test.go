package patch

import "testing"

func TestFromCommand(t *testing.T) {
	const body = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
	heredoc := "apply_patch <<'EOF'\n" + body + "EOF\n"
	cases := []struct {
		argv []string
		dir  string
		ok   bool
	}{
		{[]string{"apply_patch", body}, "", true},
		{[]string{"applypatch", body}, "", true},
		{[]string{"bash", "-lc", heredoc}, "", true},
		{[]string{"/bin/zsh", "-c", "  " + heredoc}, "", true},
		{[]string{"bash", "-lc", "cd sub && " + heredoc}, "sub", true},
		{[]string{"bash", "-lc", "cd 'my dir' && " + heredoc}, "", false}, // a path with a space: not ours to guess
		{[]string{"bash", "-lc", "cd sub; " + heredoc}, "", false},
		{[]string{"bash", "-lc", "apply_patch --help"}, "", false},
		{[]string{"bash", "-lc", "echo apply_patch <<EOF"}, "", false},
		{[]string{"python3", "-c", heredoc}, "", false},
		{[]string{"apply_patch"}, "", false},
		{[]string{"ls", "-la"}, "", false},
		{nil, "", false},
	}
	for _, tc := range cases {
		text, dir, ok := FromCommand(tc.argv)
		if ok != tc.ok || dir != tc.dir {
			t.Errorf("FromCommand(%q) = dir %q, %v; want %q, %v", tc.argv, dir, ok, tc.dir, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		p, err := Parse(text)
		if err != nil || len(p.Ops) != 1 {
			t.Errorf("FromCommand(%q): text %q does not parse: %v", tc.argv, text, err)
		}
	}
}
