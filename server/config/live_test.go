package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func reloadLog() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

// Reload reads the file again with the first load's overrides; the
// [server] table keeps its values (logged as needing a restart); a file
// that no longer loads leaves the configuration in use, and the error
// names the file.
func TestLiveReload(t *testing.T) {
	home := writeConfig(t, "model = \"a\"\nmodel_provider = \"demo\"\n")
	opts := Options{Home: home, Overrides: []string{"model_reasoning_effort=\"high\""}, Getenv: env()}
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(cfg, opts)
	file := filepath.Join(home, FileName)
	if err := os.WriteFile(file, []byte("model = \"b\"\nmodel_provider = \"demo\"\n[server]\nmax_inflight = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log, logs := reloadLog()
	if err := live.Reload(log, "test"); err != nil {
		t.Fatal(err)
	}
	got := live.Get()
	if got.Model != "b" || got.ReasoningEffort != "high" || got.Server != cfg.Server {
		t.Fatalf("after the reload: model %q effort %q server %+v", got.Model, got.ReasoningEffort, got.Server)
	}
	if cfg.Model != "a" {
		t.Fatal("the old snapshot changed")
	}
	e := logs.FilterMessageSnippet("reloaded the configuration").All()
	if len(e) != 1 {
		t.Fatalf("logs %v", logs.All())
	}
	changed := e[0].ContextMap()["changed"]
	if s, ok := changed.([]any); !ok || !slices.Contains(s, any("Model")) || slices.Contains(s, any("ReasoningEffort")) || slices.Contains(s, any("Server")) {
		t.Fatalf("changed %v", changed)
	}
	if logs.FilterMessageSnippet("only at a restart").Len() != 1 {
		t.Fatalf("no restart warning: %v", logs.All())
	}

	if err := os.WriteFile(file, []byte("model = [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := live.Reload(log, "test"); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("a broken file reloaded: %v", err)
	}
	if live.Get() != got {
		t.Fatal("a failed reload replaced the configuration")
	}
	if e := logs.FilterMessageSnippet("could not reload").All(); len(e) != 1 || e[0].Level != zapcore.ErrorLevel || e[0].ContextMap()["file"] != file {
		t.Fatalf("failed reload logs %v", e)
	}
}

func TestFixedIsNotReloadable(t *testing.T) {
	cfg := Default(t.TempDir())
	live := Fixed(cfg)
	log, _ := reloadLog()
	if live.Reloadable() || live.Reload(log, "test") != ErrNotReloadable || live.Get() != cfg {
		t.Fatal("a fixed configuration reloaded")
	}
}

// Readers see one whole configuration or the next while reloads run
// (meaningful under -race).
func TestLiveGetDuringReloads(t *testing.T) {
	home := writeConfig(t, "model = \"a\"\nmodel_provider = \"demo\"\n")
	opts := Options{Home: home, Getenv: env()}
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(cfg, opts)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			log, _ := reloadLog()
			for range 20 {
				_ = live.Reload(log, "test")
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			if c := live.Get(); c.Model != "a" || c.Provider.ID != DemoProviderID {
				t.Errorf("read %q %q", c.Model, c.Provider.ID)
			}
		}
	})
	wg.Wait()
}

// Current loads config.toml again when it changed on disk, with the
// first load's overrides, and otherwise returns the configuration in use
// without loading. A rewrite of the same size right after a load (within
// one tick of the file system's clock, so with the same stamp) is seen
// too. A version that does not load leaves the configuration in use and
// its error is returned at each call, logged once, until the file
// changes again.
func TestLiveCurrentFollowsTheFile(t *testing.T) {
	home := writeConfig(t, "model = \"aa\"\nmodel_provider = \"demo\"\n")
	opts := Options{Home: home, Overrides: []string{"model_reasoning_effort=\"high\""}, Getenv: env()}
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(cfg, opts)
	log, logs := reloadLog()
	if got, err := live.Current(log); got != cfg || err != nil || logs.Len() != 0 {
		t.Fatalf("an unchanged file was loaded again: %v %v", err, logs.All())
	}
	file := filepath.Join(home, FileName)
	// Same size, written in place: only the bytes tell.
	if err := os.WriteFile(file, []byte("model = \"bb\"\nmodel_provider = \"demo\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := live.Current(log)
	if err != nil || got.Model != "bb" || got.ReasoningEffort != "high" || live.Get() != got {
		t.Fatalf("after an edit: %v model %q effort %q", err, got.Model, got.ReasoningEffort)
	}
	if e := logs.FilterMessageSnippet("reloaded the configuration").All(); len(e) != 1 || e[0].ContextMap()["trigger"] != "config.toml changed" {
		t.Fatalf("reload logs %v", logs.All())
	}
	if again, _ := live.Current(log); again != got {
		t.Fatal("the same version was loaded twice")
	}

	if err := os.WriteFile(file, []byte("model = [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		kept, err := live.Current(log)
		if kept != got || err == nil || !strings.Contains(err.Error(), file) {
			t.Fatalf("a broken file: %v, kept %v", err, kept == got)
		}
	}
	if n := logs.FilterMessageSnippet("could not reload").Len(); n != 1 {
		t.Fatalf("the broken version was logged %d times", n)
	}

	if err := os.WriteFile(file, []byte("model = \"cc\"\nmodel_provider = \"demo\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fixed, err := live.Current(log); err != nil || fixed.Model != "cc" {
		t.Fatalf("after the fix: %v %q", err, fixed.Model)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if gone, err := live.Current(log); err != nil || gone.Model != DefaultModel {
		t.Fatalf("after removal: %v %q", err, gone.Model)
	}
}

// A fixed configuration is never loaded again.
func TestFixedCurrent(t *testing.T) {
	cfg := Default(t.TempDir())
	log, _ := reloadLog()
	if got, err := Fixed(cfg).Current(log); got != cfg || err != nil {
		t.Fatal("a fixed configuration changed")
	}
}
