package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// Live is the configuration the daemon runs with, which a reload (SIGHUP,
// a config write) replaces as a whole. Readers take a snapshot with Get
// where they build something new (a thread's settings) and keep using
// that snapshot: a running thread never sees half of one configuration
// and half of the next.
type Live struct {
	cur atomic.Pointer[Config]
	// opts are what the configuration was loaded with; nil for a fixed
	// configuration (built in a program, not loaded), which cannot be
	// reloaded.
	opts *Options
	// mu serialises reloads, so that two of them never race to store.
	mu sync.Mutex
	// onReload are called, in order, after each successful reload.
	onReload []func(*Config)
	// seen is the version of config.toml last loaded or tried, and
	// seenErr why it could not be used (nil when it is the one in use).
	// Guarded by mu.
	seen    fileVersion
	seenErr error
}

// OnReload registers fn, called with the new configuration after each
// successful reload (under the reload's lock: fn must not block).
func (l *Live) OnReload(fn func(*Config)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onReload = append(l.onReload, fn)
}

// NewLive holds cfg, loaded by Load(opts); Reload loads again with the
// same options (home, --config overrides, --enable/--disable, strict).
func NewLive(cfg *Config, opts Options) *Live {
	l := &Live{opts: &opts, seen: cfg.version}
	l.cur.Store(cfg)
	return l
}

// Fixed holds cfg for good: Reload refuses, config writes take effect at
// the next start. For configurations built in a program (embedding,
// tests).
func Fixed(cfg *Config) *Live {
	l := &Live{}
	l.cur.Store(cfg)
	return l
}

// Get returns the configuration in use now. Never nil; never modify it.
func (l *Live) Get() *Config { return l.cur.Load() }

// Reloadable reports whether Reload can read the configuration again.
func (l *Live) Reloadable() bool { return l.opts != nil }

// ErrNotReloadable is Reload's error for a Fixed configuration.
var ErrNotReloadable = errors.New("the configuration was not loaded from a file and cannot be reloaded")

// Reload reads config.toml again with the options it was first loaded
// with. On success the new configuration is what Get returns from now
// on, except the [server] table, which only a restart changes (the
// engine's limits are set when it is built); on error (the file cannot
// be read or parsed, a value is invalid) the configuration in use is
// kept. Either way the outcome is logged, naming the file; why says
// what asked for the reload ("SIGHUP", "config write").
func (l *Live) Reload(log *zap.Logger, why string) error {
	if l.opts == nil {
		return ErrNotReloadable
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reloadLocked(log, why)
}

// Current returns the configuration a new thread starts with: the one in
// use, loaded again first (as Reload does) when config.toml changed on
// disk since it was last loaded or tried, so that an edit needs no
// SIGHUP. A check costs a stat (and, within racyWindow of the file's
// last change, a read). When the file's present version cannot be used,
// the configuration in use is returned with that version's error, each
// time until the file changes again (the failure is logged once).
func (l *Live) Current(log *zap.Logger) (*Config, error) {
	if l.opts == nil {
		return l.Get(), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen.changed(filepath.Join(l.opts.Home, FileName)) {
		_ = l.reloadLocked(log, "config.toml changed")
	}
	return l.Get(), l.seenErr
}

// reloadLocked is Reload; l.mu is held.
func (l *Live) reloadLocked(log *zap.Logger, why string) error {
	old := l.Get()
	next, version, err := load(*l.opts)
	l.seen, l.seenErr = version, err
	if err != nil {
		log.Error("could not reload the configuration; keeping the one in use",
			zap.String("file", old.Path), zap.String("trigger", why), zap.Error(err))
		return err
	}
	var restart []string
	if !reflect.DeepEqual(old.Server, next.Server) {
		restart = append(restart, "[server]")
		next.Server = old.Server
	}
	changed := changedSettings(old, next)
	l.cur.Store(next)
	for _, w := range next.Warnings {
		log.Warn("config warning: "+w.Summary, zap.String("details", w.Details))
	}
	log.Info("reloaded the configuration: new threads use it, running threads keep theirs",
		zap.String("file", next.Path), zap.String("trigger", why), zap.Strings("changed", changed),
		zap.String("model", next.Model), zap.String("provider", next.Provider.ID))
	if len(restart) > 0 {
		log.Warn("some settings changed that take effect only at a restart; they keep their values until then",
			zap.String("file", next.Path), zap.Strings("settings", restart))
	}
	for _, fn := range l.onReload {
		fn(next)
	}
	return nil
}

// changedSettings names the settings (Config's fields) that differ
// between a and b, for the reload's log. Values are never logged: a
// provider carries its API key.
func changedSettings(a, b *Config) []string {
	changed := []string{}
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := range va.NumField() {
		f := va.Type().Field(i)
		if !f.IsExported() || f.Name == "Warnings" {
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			changed = append(changed, f.Name)
		}
	}
	return changed
}
