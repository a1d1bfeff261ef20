package test

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/agentd-dev/agentd"

// The arrows of docs/architecture.md, checked on the production code of
// every package of the module: each rule names a package (and those under
// it) and the packages it must not import.
func TestImportArrows(t *testing.T) {
	rules := []struct {
		from    string
		mustNot []string
	}{
		{"server/rpc", []string{"server/threads", "server/utility", "projection", "core", "server/config"}},
		{"server/threads", []string{"server/utility"}},
		{"server/utility", []string{"server/threads"}},
		{"projection", []string{"server", "cmd"}},
		{"core", []string{"server", "projection", "protocol", "cmd"}},
		{"core/model", []string{"core/tools"}},
		{"core/tools", []string{"core/model"}},
		{"core/mcp", []string{""}}, // nothing of ours
		{"protocol", []string{""}}, // nothing of ours
		{"schema", []string{"server", "core", "projection"}},
		{"server/auth", []string{"server/rpc", "server/threads", "server/utility", "server/config", "core", "projection", "protocol", "cmd"}},
		{"server/atomicfile", []string{""}}, // nothing of ours
		{"server/metrics", []string{""}},    // nothing of ours
		// The scope table and checks: the protocol's types only.
		{"server/scope", []string{"server", "core", "projection", "cmd", "schema"}},
		// agentd exec is a client of the protocol: it reaches the agent
		// through inprocess only.
		{"cmd/agentd/execcli", []string{"server/rpc", "server/threads", "server/utility", "core", "projection"}},
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string][]string{} // package path (relative) → imports of ours
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		rel, _ := filepath.Rel(root, path)
		for _, imp := range p.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				pkgs[filepath.ToSlash(rel)] = append(pkgs[filepath.ToSlash(rel)], strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	under := func(pkg, dir string) bool {
		return dir == "" || pkg == dir || strings.HasPrefix(pkg, dir+"/")
	}
	checked := 0
	for pkg, imports := range pkgs {
		for _, imp := range imports {
			if under(imp, "test") || imp == "server/rpc/rpctest" {
				if !strings.HasPrefix(pkg, "test") {
					t.Errorf("%s (production code) imports %s", pkg, imp)
				}
			}
			for _, r := range rules {
				if !under(pkg, r.from) {
					continue
				}
				checked++
				for _, bad := range r.mustNot {
					if under(imp, bad) && !under(imp, r.from) {
						t.Errorf("%s imports %s: %s must not import %q", pkg, imp, r.from, bad)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no import was checked: the walk found no packages")
	}
}
