package exec

import (
	"slices"
	"testing"
)

func TestEnvPolicy(t *testing.T) {
	environ := []string{"PATH=/bin", "home=/root", "OPENAI_API_KEY=k", "GH_TOKEN=t", "MY_SECRET_X=s", "Build_Dir=/b", "OTHER=o", "PROVIDER_CRED=p", "BAD"}
	for _, tc := range []struct {
		name   string
		policy EnvPolicy
		thread string
		want   []string
	}{
		{"default excludes credentials", EnvPolicy{}, "",
			[]string{"PATH=/bin", "home=/root", "Build_Dir=/b", "OTHER=o", "PROVIDER_CRED=p"}},
		{"all, no default excludes, hidden names, thread id", EnvPolicy{Inherit: InheritAll, IgnoreDefaultExcludes: true, Hidden: []string{"PROVIDER_CRED"}}, "th",
			[]string{"PATH=/bin", "home=/root", "OPENAI_API_KEY=k", "GH_TOKEN=t", "MY_SECRET_X=s", "Build_Dir=/b", "OTHER=o", "CODEX_THREAD_ID=th"}},
		{"core keeps core names in any case", EnvPolicy{Inherit: InheritCore}, "",
			[]string{"PATH=/bin", "home=/root"}},
		{"none, then set", EnvPolicy{Inherit: InheritNone, Set: map[string]string{"B": "2", "A": "1"}}, "",
			[]string{"A=1", "B=2"}},
		{"exclude globs ignore case, set replaces", EnvPolicy{Exclude: []string{"build_*", "o?her"}, Set: map[string]string{"PATH": "/x"}}, "",
			[]string{"PATH=/x", "home=/root", "PROVIDER_CRED=p"}},
		{"include_only filters set too", EnvPolicy{IncludeOnly: []string{"PATH", "[hH]OME"}, Set: map[string]string{"ADDED": "1"}}, "th",
			[]string{"PATH=/bin", "home=/root", "CODEX_THREAD_ID=th"}},
		{"set wins over hidden", EnvPolicy{Hidden: []string{"PROVIDER_CRED"}, Set: map[string]string{"PROVIDER_CRED": "mine"}}, "",
			[]string{"PATH=/bin", "home=/root", "Build_Dir=/b", "OTHER=o", "PROVIDER_CRED=mine"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.policy.Environ(environ, tc.thread)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	if got := (EnvPolicy{Inherit: InheritNone}).Environ(environ, ""); got == nil || len(got) != 0 {
		t.Fatalf("an empty environment must be empty, not nil: %#v", got)
	}
	if ValidPattern("[") || !ValidPattern("A*") {
		t.Fatal("ValidPattern")
	}
}

// ChildEnv drops only the hidden names (whatever the excludes say) and
// adds the explicit variables, which may name a hidden one on purpose.
func TestChildEnv(t *testing.T) {
	p := EnvPolicy{Hidden: []string{"PROVIDER_CRED", "NOTIFY_SOCKET", "OPENAI_API_KEY"}}
	environ := []string{"PATH=/bin", "PROVIDER_CRED=p", "GH_TOKEN=t", "NOTIFY_SOCKET=/run/n", "OPENAI_API_KEY=k", "OTHER=o"}
	got := p.ChildEnv(environ, map[string]string{"OPENAI_API_KEY": "given", "OTHER": "replaced"})
	want := []string{"PATH=/bin", "GH_TOKEN=t", "OPENAI_API_KEY=given", "OTHER=replaced"}
	if !slices.Equal(got, want) {
		t.Fatalf("ChildEnv = %q, want %q", got, want)
	}
	if got := p.ChildEnv(nil, nil); got == nil || len(got) != 0 {
		t.Fatalf("ChildEnv(nil, nil) = %#v, want an empty, non-nil list", got)
	}
}
