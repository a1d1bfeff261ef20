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
