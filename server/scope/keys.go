package scope

import (
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/agentd-dev/agentd/protocol"
)

// protectedTables are the config keys that decide where credentials go
// or what runs outside a turn: an operate client may write neither them
// nor anything under them, at the top level or under profiles.<name>.
// app_server, fs and server are agentd's own additions: its tokens grant
// scopes, its fs roots confine the clients, and its limits bound them.
// model_instructions_file names a file whose text goes to the provider
// and into rollouts: any file the daemon can read (/etc/shadow).
var protectedTables = []string{
	"model_providers",
	"mcp_servers",
	"notify",
	"shell_environment_policy",
	"sandbox_mode",
	"approval_policy",
	"sandbox_workspace_write",
	"app_server",
	"fs",
	"server",
	"model_instructions_file",
}

// ProtectedKeys lists the protected keys as docs/security.md names them:
// each with everything under it, at the top level and under
// profiles.<name>.
func ProtectedKeys() []string {
	return append(slices.Clone(protectedTables), "projects.<path>.trust_level", "*base_url")
}

// ProtectedKey reports whether the config key at path (split at its dots)
// is protected, itself or as part of a protected table: model_providers.x,
// any *base_url, projects.<path>.trust_level, profiles.p.notify, ….
func ProtectedKey(path []string) bool {
	for _, seg := range path {
		if strings.HasSuffix(seg, "base_url") {
			return true
		}
	}
	if len(path) >= 2 && path[0] == "profiles" {
		path = path[2:]
	}
	if len(path) == 0 {
		return false
	}
	if slices.Contains(protectedTables, path[0]) {
		return true
	}
	return path[0] == "projects" && len(path) >= 3 && path[2] == "trust_level"
}

// ProtectedChange compares two config documents (config.toml before and
// after a write) and returns the first protected key whose value differs,
// in key order. Comparing the documents, rather than the edits, catches
// every way of reaching a key: a dotted path, a table holding it, a
// replaced or removed parent table, an upsert.
func ProtectedChange(before, after map[string]any) (string, bool) {
	return protectedChange(nil, before, after)
}

func protectedChange(path []string, before, after any) (string, bool) {
	if reflect.DeepEqual(before, after) {
		return "", false
	}
	if len(path) > 0 && ProtectedKey(path) {
		return KeyString(path), true
	}
	b, _ := before.(map[string]any)
	a, _ := after.(map[string]any)
	keys := make([]string, 0, len(b)+len(a))
	for k := range b {
		keys = append(keys, k)
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if key, ok := protectedChange(append(slices.Clip(path), k), b[k], a[k]); ok {
			return key, true
		}
	}
	return "", false
}

// bareKey matches a TOML key that needs no quotes; compiled at first use,
// not at the daemon's start.
var bareKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// KeyString writes a split key path back as a dotted key, quoting the
// parts that need it (projects."/srv/x".trust_level), cut to a sane
// length.
func KeyString(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		if bareKey().MatchString(p) {
			parts[i] = p
		} else {
			parts[i] = strconv.Quote(p)
		}
	}
	return protocol.Cut(strings.Join(parts, "."))
}

// ConfigWrite refuses a config write by a client with scope s that
// changes a protected key: before and after are config.toml's documents.
// Nil when the write may go ahead.
func ConfigWrite(s Scope, method string, before, after map[string]any) *protocol.Error {
	if s.Allows(Admin) {
		return nil
	}
	if key, ok := ProtectedChange(before, after); ok {
		return Deny(s, method, "to change "+key+" (a protected key; see docs/security.md)")
	}
	return nil
}

// ConfigOverrides refuses the config overrides of thread/start, resume
// or fork (dotted keys) that name a protected key, for a client with
// scope s. approval_policy and sandbox_mode are left out: they are the
// thread's settings, which Approval and SandboxMode check. Nil when the
// overrides may apply.
func ConfigOverrides(s Scope, method string, overrides map[string]any) *protocol.Error {
	if s.Allows(Admin) {
		return nil
	}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "approval_policy" || k == "sandbox_mode" {
			continue
		}
		if key, ok := protectedChange(strings.Split(k, "."), nil, overrides[k]); ok {
			return Deny(s, method, "with config."+key+" (a protected key; see docs/security.md)")
		}
	}
	return nil
}
