package utility

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/server/config"
	"github.com/agentd-dev/agentd/server/configedit"
	"github.com/agentd-dev/agentd/server/rpc"
)

// Service is the utility layer registered on a server, for what the
// daemon's other layers ask of it.
type Service struct{ u *utility }

// TrustProject records in config.toml that the project at root is
// trusted ([projects."<root>"] trust_level = "trusted", appended), as
// the reference does when a thread starts with a sandbox that writes in
// a git repository config.toml does not rate; nothing when config.toml
// rates root already, trusted or untrusted. r is the request on whose
// behalf it writes: its client's scope must allow the change (the key is
// protected: an admin's), the file must still load, and the running
// configuration is reloaded, all as for config/value/write.
func (s *Service) TrustProject(r *rpc.Request, root string) error {
	u := s.u
	u.configMu.Lock()
	defer u.configMu.Unlock()
	src, doc, err := u.readUserLayer()
	if err != nil {
		return err
	}
	res, err := trustEdit(src, doc, root)
	if err != nil || res == nil {
		return err
	}
	_, err = u.commitConfig(r, u.configPath(), doc, res)
	return err
}

// trustEdit is config.toml (src, parsed as doc) with root trusted; nil
// when it rates root already. A root that config/value/write would refuse
// as a key (the root comes from the file system, not from a client's
// JSON), or an edit that would rewrite the user's file (its comments and
// layout) rather than add to it, is an error: a thread/start does not do
// that as a side effect.
func trustEdit(src []byte, doc map[string]any, root string) (*configedit.Result, error) {
	if projects, ok := doc["projects"].(map[string]any); ok {
		if project, ok := projects[root].(map[string]any); ok && project["trust_level"] != nil {
			return nil, nil
		}
	}
	if len(root) > maxKeyPathBytes || !utf8.ValidString(root) || strings.IndexFunc(root, unicode.IsControl) >= 0 {
		return nil, fmt.Errorf("the path %s cannot be a config.toml key", config.KeyText(root))
	}
	res, err := configedit.MergeTable(src, []string{"projects", root}, map[string]any{"trust_level": config.TrustTrusted})
	if err != nil {
		return nil, err
	}
	if !res.InPlace {
		return nil, errors.New("config.toml's projects cannot be added to in place")
	}
	return res, nil
}
