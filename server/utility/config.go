package utility

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/agentd-dev/agentd/server/atomicfile"

	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/projection"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/configedit"
	"github.com/agentd-dev/agentd/server/rpc"
	"github.com/agentd-dev/agentd/server/scope"
)

// Config write error codes (data.config_write_error_code), the
// reference's.
const (
	configVersionConflict = "configVersionConflict"
	configValidationError = "configValidationError"
	configLayerReadonly   = "configLayerReadonly"
)

// configPath is the user's config.toml.
func (u *utility) configPath() string {
	cfg := u.config()
	if p := cfg.Path; p != "" {
		return p
	}
	return filepath.Join(cfg.Home, config.FileName)
}

// userLayerSource names the user layer.
func (u *utility) userLayerSource() protocol.ConfigLayerSource {
	return protocol.ConfigLayerSource{User: &protocol.UserConfigSource{File: protocol.AbsPath(u.configPath())}}
}

// readUserLayer reads config.toml as it is now: its text and document
// (empty when the file does not exist).
func (u *utility) readUserLayer() ([]byte, map[string]any, error) {
	src, err := os.ReadFile(u.configPath())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	doc, err := configedit.Parse(src)
	if err != nil {
		return nil, nil, fmt.Errorf("%s cannot be parsed: %v", u.configPath(), err)
	}
	return src, doc, nil
}

// runningConfig is the configuration new threads use, with the
// reference's snake_case keys for what agentd supports.
func (u *utility) runningConfig() map[string]any {
	c := u.config()
	cfg := map[string]any{
		"model":           c.Model,
		"model_provider":  c.Provider.ID,
		"approval_policy": string(projection.ApprovalPolicy(c.ApprovalPolicy).Mode),
		"sandbox_mode":    string(c.Sandbox.Mode),
	}
	if c.ReasoningEffort != "" {
		cfg["model_reasoning_effort"] = c.ReasoningEffort
	}
	if c.ReasoningSummary != "" {
		cfg["model_reasoning_summary"] = c.ReasoningSummary
	}
	if c.ContextWindow > 0 {
		cfg["model_context_window"] = c.ContextWindow
	}
	if c.AutoCompactTokenLimit > 0 {
		cfg["model_auto_compact_token_limit"] = c.AutoCompactTokenLimit
	}
	if c.Verbosity != "" {
		cfg["model_verbosity"] = c.Verbosity
	}
	if c.ToolOutputTokenLimit > 0 {
		cfg["tool_output_token_limit"] = c.ToolOutputTokenLimit
	}
	if c.WebSearch != "" {
		cfg["web_search"] = c.WebSearch
	}
	if c.HideAgentReasoning {
		cfg["hide_agent_reasoning"] = true
	}
	if len(c.Notify) > 0 {
		cfg["notify"] = c.Notify
	}
	if len(c.Projects) > 0 {
		projects := map[string]any{}
		for p, level := range c.Projects {
			projects[p] = map[string]any{"trust_level": level}
		}
		cfg["projects"] = projects
	}
	if len(c.FsRoots) > 0 {
		cfg["fs"] = map[string]any{"roots": c.FsRoots}
	}
	if c.Sandbox.Mode == policy.SandboxWorkspaceWrite {
		roots := []string{}
		roots = append(roots, c.Sandbox.WritableRoots...)
		cfg["sandbox_workspace_write"] = map[string]any{
			"writable_roots": roots, "network_access": c.Sandbox.NetworkAccess,
			"exclude_tmpdir_env_var": c.Sandbox.ExcludeTmpdirEnvVar, "exclude_slash_tmp": c.Sandbox.ExcludeSlashTmp,
		}
	}
	return cfg
}

// configRead answers with the running configuration (what new threads
// use), plus the origin of every key config.toml sets and, on request,
// config.toml as a layer, both with the file's current version (which
// config writes check). A write changes the file, and so the origins and
// layers, and then reloads the running configuration (as SIGHUP does);
// a hand edit of the file is loaded first (config.Live.Current, as for a
// new thread), so it shows at once there too, unless it cannot be loaded
// (the layer then says why, and the configuration in use is shown).
func (u *utility) configRead(_ context.Context, r *rpc.Request, p *protocol.ConfigReadParams) (*protocol.ConfigReadResponse, error) {
	_, _ = u.live.Current(r.Logger())
	resp := protocol.ConfigReadResponse{Config: u.runningConfig(), Origins: map[string]protocol.ConfigLayerMetadata{}}
	name := u.userLayerSource()
	_, doc, err := u.readUserLayer()
	if err != nil {
		// The file changed since the daemon started and is broken now:
		// say so in the layer rather than fail the read.
		r.Logger().Warn("config.toml cannot be read", zap.Error(err))
		if p.IncludeLayers {
			reason := err.Error()
			resp.Layers = []protocol.ConfigLayer{{Name: name, Version: "", Config: map[string]any{}, DisabledReason: &reason}}
		}
		return &resp, nil
	}
	version := configedit.Version(doc)
	for _, k := range configedit.Leaves(doc) {
		resp.Origins[k] = protocol.ConfigLayerMetadata{Name: name, Version: version}
	}
	// The --config overrides are a layer above the file: their keys come
	// from there.
	flags := u.config().SessionFlags
	flagsName := protocol.ConfigLayerSource{SessionFlags: &protocol.Empty{}}
	if len(flags) > 0 {
		flagsVersion := configedit.Version(flags)
		for _, k := range configedit.Leaves(flags) {
			resp.Origins[k] = protocol.ConfigLayerMetadata{Name: flagsName, Version: flagsVersion}
		}
		if p.IncludeLayers {
			resp.Layers = append(resp.Layers, protocol.ConfigLayer{Name: flagsName, Version: flagsVersion, Config: redactLayer(flags)})
		}
	}
	if p.IncludeLayers {
		resp.Layers = append(resp.Layers, protocol.ConfigLayer{Name: name, Version: version, Config: redactLayer(doc)})
	}
	return &resp, nil
}

// configValueWrite sets (or, with null, removes) one key of config.toml.
func (u *utility) configValueWrite(_ context.Context, r *rpc.Request, p *protocol.ConfigValueWriteParams) (*protocol.ConfigWriteResponse, error) {
	return u.configWrite(r, p.FilePath, p.ExpectedVersion, []configedit.Edit{
		{KeyPath: p.KeyPath, Value: p.Value, Upsert: p.MergeStrategy == protocol.MergeUpsert},
	})
}

// configBatchWrite applies several edits at once: all of them or none.
// Every write reloads the configuration for new threads, so
// reloadUserConfig is accepted and asks for nothing more.
func (u *utility) configBatchWrite(_ context.Context, r *rpc.Request, p *protocol.ConfigBatchWriteParams) (*protocol.ConfigWriteResponse, error) {
	edits := make([]configedit.Edit, len(p.Edits))
	for i, e := range p.Edits {
		edits[i] = configedit.Edit{KeyPath: e.KeyPath, Value: e.Value, Upsert: e.MergeStrategy == protocol.MergeUpsert}
	}
	return u.configWrite(r, p.FilePath, p.ExpectedVersion, edits)
}

// configWrite edits config.toml: it checks the expected version, applies
// the edits (in place where possible), checks that the client's scope may
// make the change and that agentd can still load the result, replaces the
// file atomically, and reloads the running configuration from it (the
// SIGHUP path: new threads use it; a reload that fails, say under
// --strict-config, keeps the old one and is logged, and the write stands).
func (u *utility) configWrite(r *rpc.Request, filePath, expected *string, edits []configedit.Edit) (*protocol.ConfigWriteResponse, error) {
	return u.configWriteFrom(r, filePath, expected, func(map[string]any) ([]configedit.Edit, error) { return edits, nil })
}

// configWriteFrom is configWrite with edits made from the file's document
// as it is under the write lock (a read-modify-write, like
// skills/config/write's, that no other write can slip into). An error
// from edits is returned as it is.
func (u *utility) configWriteFrom(r *rpc.Request, filePath, expected *string, editsFor func(doc map[string]any) ([]configedit.Edit, error)) (*protocol.ConfigWriteResponse, error) {
	path := u.configPath()
	sc := r.Conn().Scope()
	if filePath != nil && filepath.Clean(*filePath) != path && !sc.Allows(scope.Admin) {
		// No file but config.toml, whatever agentd may write for an
		// admin some day.
		return nil, scope.Deny(sc, r.Method(), fmt.Sprintf("to write %q: only the user's config.toml", protocol.Cut(*filePath)))
	}
	if filePath != nil && filepath.Clean(*filePath) != path {
		return nil, configWriteError(configLayerReadonly, "agentd only writes its user config file %s, not %s", path, protocol.Cut(*filePath))
	}
	u.configMu.Lock()
	defer u.configMu.Unlock()
	src, doc, err := u.readUserLayer()
	if err != nil {
		return nil, configWriteError(configValidationError, "%v", err)
	}
	if expected != nil && *expected != configedit.Version(doc) {
		return nil, configWriteError(configVersionConflict, "Configuration was modified since last read. Fetch latest version and retry.")
	}
	edits, err := editsFor(doc)
	if err != nil {
		return nil, err
	}
	if err := checkKeyPaths(edits); err != nil {
		return nil, err
	}
	res, err := configedit.Apply(src, edits)
	if err != nil {
		return nil, configWriteError(configValidationError, "Invalid configuration edit: %v", err)
	}
	return u.commitConfig(r, path, doc, res)
}

// commitConfig writes res, an edit of config.toml's document doc, for r,
// under configMu: it checks that r's client may make the change and that
// agentd can still load the result, replaces the file atomically, and
// reloads the running configuration from it.
func (u *utility) commitConfig(r *rpc.Request, path string, doc map[string]any, res *configedit.Result) (*protocol.ConfigWriteResponse, error) {
	sc := r.Conn().Scope()
	// The documents, not the edits, are compared: however a protected
	// key is reached (a table holding it, a parent replaced or removed),
	// its change shows.
	if perr := scope.ConfigWrite(sc, r.Method(), doc, res.Doc); perr != nil {
		return nil, perr
	}
	if err := checkLoads(res.Text, path); err != nil {
		return nil, configWriteError(configValidationError, "Invalid configuration: %v", err)
	}
	if err := writeFileAtomic(path, res.Text); err != nil {
		return nil, protocol.Errorf(protocol.CodeInternalError, "writing %s: %s", protocol.Cut(path), osErrorText(err))
	}
	if !res.InPlace {
		r.Logger().Warn("config.toml was rewritten from its content: its comments and layout are gone", zap.String("file", path))
	}
	// A reloadable configuration tells its listeners (the MCP servers)
	// itself; a fixed one (embedding, tests) has configWritten.
	if u.live.Reloadable() {
		_ = u.live.Reload(r.Logger(), "config write")
	} else if u.configWritten != nil {
		go u.configWritten()
	}
	return &protocol.ConfigWriteResponse{Status: protocol.WriteOK, Version: res.Version, FilePath: protocol.AbsPath(path)}, nil
}

// maxKeyPathBytes bounds an edit's keyPath. A key the loader does not
// know is kept and warned about (configWarning to every new connection,
// a log line at each reload), so a long one would be repeated forever;
// no key agentd or the reference reads comes near the bound.
const maxKeyPathBytes = 1024

// checkKeyPaths refuses an edit whose keyPath is past maxKeyPathBytes or
// holds a control character (no configuration key has one, and it would
// reach warnings and logs).
func checkKeyPaths(edits []configedit.Edit) error {
	for _, e := range edits {
		if len(e.KeyPath) > maxKeyPathBytes {
			return configWriteError(configValidationError, "Invalid configuration edit: keyPath is %d bytes, more than the limit of %d: %s", len(e.KeyPath), maxKeyPathBytes, protocol.Cut(e.KeyPath))
		}
		if strings.IndexFunc(e.KeyPath, unicode.IsControl) >= 0 {
			return configWriteError(configValidationError, "Invalid configuration edit: keyPath has a control character: %s", config.KeyText(e.KeyPath))
		}
	}
	return nil
}

// configWriteError is a -32600 carrying the reference's write error code.
func configWriteError(code, format string, args ...any) error {
	return protocol.InvalidRequest(format, args...).WithData(map[string]string{"config_write_error_code": code})
}

// checkLoads checks that agentd's loader accepts text as config.toml, so
// that a write never leaves a file the daemon cannot start with. The
// loader reads a home directory, so the text goes to a scratch one; its
// path is replaced by path in the error.
func checkLoads(text []byte, path string) error {
	dir, err := os.MkdirTemp("", "agentd-config-check")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	scratch := filepath.Join(dir, config.FileName)
	if err := os.WriteFile(scratch, text, 0o600); err != nil {
		return err
	}
	if _, err := config.Load(config.Options{Home: dir}); err != nil {
		return errors.New(strings.ReplaceAll(err.Error(), scratch, path))
	}
	return nil
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory, so that a reader never sees half a file. A symbolic
// link (a managed dotfile) is followed: its target is replaced.
func writeFileAtomic(path string, data []byte) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	return atomicfile.Write(path, data, mode)
}
