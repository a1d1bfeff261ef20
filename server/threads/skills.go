package threads

import (
	"go.uber.org/zap"

	"github.com/agentd-dev/agentd/core/skills"
	"github.com/agentd-dev/agentd/server/config"
)

// skills finds the skills of a new thread in cwd, as cfg says. They are
// searched for each thread loaded, so a skill added, changed or removed
// on disk shows in the next thread without a restart. What cannot be
// used is logged; the thread never fails for it.
func (sv *service) skills(cfg *config.Config, cwd string, log *zap.Logger) []skills.Skill {
	res := skills.Discover(cwd, cfg.SkillsOptions())
	for _, e := range res.Errors {
		log.Warn("a skill cannot be used", zap.String("path", e.Path), zap.String("reason", e.Message))
	}
	return res.Skills
}
