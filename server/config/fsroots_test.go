package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// [fs] roots are resolved to real directories; --fs-root replaces them;
// a relative, missing or non-directory root stops loading with an error
// that names it.
func TestFsRoots(t *testing.T) {
	tmp := t.TempDir()
	real := filepath.Join(tmp, "real")
	other := filepath.Join(tmp, "other")
	link := filepath.Join(tmp, "link")
	file := filepath.Join(tmp, "file")
	for _, d := range []string{real, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The temporary directory itself may be reached through a link.
	realTmp, err := filepath.EvalSymlinks(tmp)
	if err != nil {
		t.Fatal(err)
	}

	home := writeConfig(t, fmt.Sprintf("[fs]\nroots = [%q, %q]\n", link, other+"/"))
	cfg, err := Load(Options{Home: home, Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(realTmp, "real"), filepath.Join(realTmp, "other")}; !slices.Equal(cfg.FsRoots, want) {
		t.Fatalf("roots %q, want %q", cfg.FsRoots, want)
	}
	cfg, err = Load(Options{Home: home, Getenv: env(), FsRoots: []string{other}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(realTmp, "other")}; !slices.Equal(cfg.FsRoots, want) {
		t.Fatalf("--fs-root: roots %q, want %q", cfg.FsRoots, want)
	}
	if cfg, err = Load(Options{Home: t.TempDir(), Getenv: env()}); err != nil || cfg.FsRoots != nil {
		t.Fatalf("unset: roots %q, %v", cfg.FsRoots, err)
	}

	for _, tc := range []struct {
		toml  string
		flags []string
		want  string
	}{
		{`roots = ["work"]`, nil, "config key `fs.roots`: \"work\" is not an absolute path"},
		{fmt.Sprintf("roots = [%q]", filepath.Join(tmp, "missing")), nil, fmt.Sprintf("config key `fs.roots`: %q does not exist", filepath.Join(tmp, "missing"))},
		{fmt.Sprintf("roots = [%q]", file), nil, fmt.Sprintf("config key `fs.roots`: %q is not a directory", file)},
		{"", []string{"rel/dir"}, "--fs-root: \"rel/dir\" is not an absolute path"},
		{"", []string{real, filepath.Join(tmp, "gone")}, fmt.Sprintf("--fs-root: %q does not exist", filepath.Join(tmp, "gone"))},
	} {
		home := writeConfig(t, "[fs]\n"+tc.toml+"\n")
		_, err := Load(Options{Home: home, Getenv: env(), FsRoots: tc.flags})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s %q: error %v, want it to start with %q", tc.toml, tc.flags, err, tc.want)
		}
	}
}
