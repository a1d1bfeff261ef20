package projectdoc

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The home's file first (an override shadows it), then one file per
// directory from the project root (the nearest ancestor with .git) down
// to the working directory; directories above the root are not read.
func TestLayering(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	write(t, filepath.Join(home, "AGENTS.md"), "shadowed\n")
	homeFile := write(t, filepath.Join(home, "AGENTS.override.md"), "\n  Home override  \n\n")
	write(t, filepath.Join(tmp, "AGENTS.md"), "above the root\n")
	proj := filepath.Join(tmp, "proj")
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := write(t, filepath.Join(proj, "AGENTS.md"), "Root line.\n")
	write(t, filepath.Join(proj, "sub", "AGENTS.md"), "shadowed too\n")
	sub := write(t, filepath.Join(proj, "sub", "AGENTS.override.md"), "Sub override.\n")
	deep := write(t, filepath.Join(proj, "sub", "deep", "CLAUDE.md"), "Deep fallback.\n")
	d := Load(filepath.Join(proj, "sub", "deep"), Options{Home: home, MaxBytes: DefaultMaxBytes,
		RootMarkers: DefaultRootMarkers, FallbackNames: []string{"", "CLAUDE.md", "CLAUDE.md"}})
	if d.Home != "Home override" {
		t.Errorf("home %q", d.Home)
	}
	if want := "Root line.\n\n\nSub override.\n\n\nDeep fallback.\n"; d.Project != want {
		t.Errorf("project %q, want %q", d.Project, want)
	}
	if want := []string{homeFile, root, sub, deep}; !reflect.DeepEqual(d.Sources, want) {
		t.Errorf("sources %v, want %v", d.Sources, want)
	}
	if len(d.Warnings) != 0 {
		t.Errorf("warnings %v", d.Warnings)
	}
}

// The project's files share one byte budget: a file is cut to what is
// left (never in the middle of a character), later ones are dropped, and
// the home's file does not count. 0 leaves the project out.
func TestBudget(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	write(t, filepath.Join(home, "AGENTS.md"), strings.Repeat("h", 15))
	proj := filepath.Join(tmp, "proj")
	os.MkdirAll(filepath.Join(proj, ".git"), 0o755)
	root := write(t, filepath.Join(proj, "AGENTS.md"), "0123456789")
	sub := write(t, filepath.Join(proj, "sub", "AGENTS.md"), "abcdé-and-more")
	write(t, filepath.Join(proj, "sub", "deep", "AGENTS.md"), "dropped")
	cwd := filepath.Join(proj, "sub", "deep")
	d := Load(cwd, Options{Home: home, MaxBytes: 15, RootMarkers: DefaultRootMarkers})
	if d.Project != "0123456789\n\nabcd" {
		t.Errorf("project %q", d.Project)
	}
	if len(d.Sources) != 3 || d.Sources[1] != root || d.Sources[2] != sub {
		t.Errorf("sources %v", d.Sources)
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "only the first 5") {
		t.Errorf("warnings %v", d.Warnings)
	}
	d = Load(cwd, Options{Home: home, MaxBytes: 0, RootMarkers: DefaultRootMarkers})
	if d.Project != "" || d.Home != strings.Repeat("h", 15) || len(d.Sources) != 1 {
		t.Errorf("budget 0: %+v", d)
	}
}

// The home's file is cut to project_doc_max_bytes on its own, with a
// warning naming it, and leaves the project's budget whole; with the
// budget 0 (no project files) it is still read, cut to the default.
func TestHomeFileIsCapped(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	homeFile := write(t, filepath.Join(home, "AGENTS.md"), strings.Repeat("h", 100))
	proj := filepath.Join(tmp, "proj")
	write(t, filepath.Join(proj, "AGENTS.md"), strings.Repeat("p", 15))
	d := Load(proj, Options{Home: home, MaxBytes: 15, RootMarkers: DefaultRootMarkers})
	if d.Home != strings.Repeat("h", 15) || d.Project != strings.Repeat("p", 15) || len(d.Sources) != 2 {
		t.Errorf("home %q project %q sources %v", d.Home, d.Project, d.Sources)
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], homeFile) || !strings.Contains(d.Warnings[0], "only the first 15") {
		t.Errorf("warnings %v", d.Warnings)
	}
	write(t, homeFile, strings.Repeat("h", DefaultMaxBytes+10))
	d = Load(proj, Options{Home: home, MaxBytes: 0, RootMarkers: DefaultRootMarkers})
	if len(d.Home) != DefaultMaxBytes || d.Project != "" || len(d.Warnings) != 1 {
		t.Errorf("budget 0: home of %d bytes, project %q, warnings %v", len(d.Home), d.Project, d.Warnings)
	}
}

// Without a root marker above it, only the working directory is read; a
// binary file is used as text, replaced where it is not UTF-8, with a
// warning; a directory named AGENTS.md is no file.
func TestNoRootAndBadFiles(t *testing.T) {
	tmp := t.TempDir()
	cwd := filepath.Join(tmp, "a", "b")
	write(t, filepath.Join(tmp, "a", "AGENTS.md"), "not read")
	os.MkdirAll(filepath.Join(cwd, "AGENTS.override.md"), 0o755)
	write(t, filepath.Join(cwd, "AGENTS.md"), "ok \xff\xfe end")
	d := Load(cwd, Options{MaxBytes: DefaultMaxBytes, RootMarkers: []string{".hg"}})
	if d.Project != "ok \uFFFD end" || d.Home != "" || len(d.Sources) != 1 {
		t.Fatalf("%+v", d)
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "invalid UTF-8") {
		t.Fatalf("warnings %v", d.Warnings)
	}
	if d := Load(filepath.Join(tmp, "none"), Options{MaxBytes: 10}); !d.Empty() || len(d.Sources) != 0 {
		t.Fatalf("nothing to find: %+v", d)
	}
}
