package utility

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/agentd-dev/agentd/core/skills"
	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/configedit"
	"github.com/agentd-dev/agentd/server/rpc"
)

// maxSkillsCwds bounds the directories one skills/list searches: each is
// a walk of several trees.
const maxSkillsCwds = 64

// skillsList lists the skills for each cwd (the daemon's without one),
// searched on disk for every request: there is no cache to reload, so
// forceReload asks for nothing more. A SKILL.md that cannot be used is
// one of the entry's errors.
func (u *utility) skillsList(_ context.Context, _ *rpc.Request, p *protocol.SkillsListParams) (*protocol.SkillsListResponse, error) {
	cwds := p.Cwds
	if len(cwds) == 0 {
		cwds = []string{u.cwd}
	}
	if len(cwds) > maxSkillsCwds {
		return nil, protocol.InvalidRequest("skills/list takes at most %d cwds, got %d", maxSkillsCwds, len(cwds))
	}
	opts := u.config().SkillsOptions()
	out := protocol.SkillsListResponse{Data: protocol.List[protocol.SkillsListEntry]{}}
	for _, cwd := range cwds {
		dir := cwd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(u.cwd, dir)
		}
		res := skills.Discover(filepath.Clean(dir), opts)
		entry := protocol.SkillsListEntry{Cwd: cwd, Skills: protocol.List[protocol.SkillMetadata]{}, Errors: protocol.List[protocol.PathErrorInfo]{}}
		for _, s := range res.Skills {
			entry.Skills = append(entry.Skills, skillMetadata(s))
		}
		for _, e := range res.Errors {
			entry.Errors = append(entry.Errors, protocol.PathErrorInfo{Path: e.Path, Message: e.Message})
		}
		out.Data = append(out.Data, entry)
	}
	return &out, nil
}

func skillMetadata(s skills.Skill) protocol.SkillMetadata {
	m := protocol.SkillMetadata{Name: s.Name, Description: s.Description, Path: s.Path, Scope: protocol.SkillScope(s.Scope), Enabled: s.Enabled}
	if s.ShortDescription != "" {
		short := s.ShortDescription
		m.ShortDescription = &short
	}
	return m
}

// skillsConfigWrite enables or disables a skill, by its SKILL.md path or
// by its name, in config.toml's [[skills.config]], as the reference
// writes it: an entry with the same selector is replaced; disabling adds
// one at the end, enabling just removes it (skills are enabled unless a
// rule says otherwise). The write is a config write (locked, checked,
// atomic) and reloads the configuration, so new threads see it.
func (u *utility) skillsConfigWrite(_ context.Context, r *rpc.Request, p *protocol.SkillsConfigWriteParams) (*protocol.SkillsConfigWriteResponse, error) {
	var name, path string
	if p.Name != nil {
		name = strings.TrimSpace(*p.Name)
	}
	if p.Path != nil {
		path = *p.Path
	}
	if (name == "") == (path == "") {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "skills/config/write requires exactly one of path or name")
	}
	if path != "" {
		if !filepath.IsAbs(path) {
			return nil, protocol.InvalidRequest("Invalid request: path %q is not absolute", protocol.Cut(path))
		}
		path = filepath.Clean(path)
	}
	var rules []skills.Rule
	_, err := u.configWriteFrom(r, nil, nil, func(doc map[string]any) ([]configedit.Edit, error) {
		entries := skillEntries(doc)
		kept := make([]any, 0, len(entries)+1)
		for _, e := range entries {
			en, _ := e.(map[string]any)
			if en != nil && sameSelector(en, name, path) {
				continue
			}
			kept = append(kept, e)
		}
		if !p.Enabled {
			entry := map[string]any{"enabled": false}
			if path != "" {
				entry["path"] = path
			} else {
				entry["name"] = name
			}
			kept = append(kept, entry)
		}
		rules = rulesOf(kept)
		if len(kept) == 0 {
			if len(entries) == 0 {
				return nil, nil // nothing to remove
			}
			return []configedit.Edit{{KeyPath: "skills.config", Value: nil}}, nil
		}
		return []configedit.Edit{{KeyPath: "skills.config", Value: kept}}, nil
	})
	if err != nil {
		return nil, err
	}
	return &protocol.SkillsConfigWriteResponse{EffectiveEnabled: effectiveEnabled(rules, name, path)}, nil
}

// skillEntries is the document's skills.config array ([[skills.config]]).
func skillEntries(doc map[string]any) []any {
	t, _ := doc["skills"].(map[string]any)
	if t == nil {
		return nil
	}
	list, _ := t["config"].([]any)
	return list
}

// sameSelector says whether a [[skills.config]] entry selects the skill
// by the same name or path.
func sameSelector(e map[string]any, name, path string) bool {
	if path != "" {
		p, _ := e["path"].(string)
		return p != "" && filepath.Clean(p) == path
	}
	n, _ := e["name"].(string)
	return strings.TrimSpace(n) == name
}

// rulesOf reads entries as the loader will.
func rulesOf(entries []any) []skills.Rule {
	var out []skills.Rule
	for _, e := range entries {
		en, _ := e.(map[string]any)
		enabled, ok := en["enabled"].(bool)
		if !ok {
			continue
		}
		name, _ := en["name"].(string)
		path, _ := en["path"].(string)
		out = append(out, skills.Rule{Name: strings.TrimSpace(name), Path: path, Enabled: enabled})
	}
	return out
}

// effectiveEnabled is whether the selected skill is enabled under rules:
// for a path, the rules by that path and by the name its SKILL.md gives
// (when it can be read); for a name, the rules by that name.
func effectiveEnabled(rules []skills.Rule, name, path string) bool {
	s := skills.Skill{Name: name, Path: path, Enabled: true}
	if path != "" {
		if resolved, err := filepath.EvalSymlinks(path); err == nil {
			s.Path = resolved
		}
		if read, err := skills.Read(path); err == nil {
			s.Name = read.Name
		}
	}
	list := []skills.Skill{s}
	skills.ApplyRules(list, rules)
	return list[0].Enabled
}
