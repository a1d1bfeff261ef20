package skills

import (
	"fmt"
	"strings"
)

// MaxInstructionBytes bounds the skill list the model is given; the
// skills that do not fit are left out (Instructions says how many).
const MaxInstructionBytes = 32 << 10

// Instructions is the developer message that tells the model which
// skills it has (the enabled ones: name, description, path of SKILL.md)
// and how to use them; "" when there are none. omitted counts the
// enabled skills left out to stay within MaxInstructionBytes.
func Instructions(list []Skill) (text string, omitted int) {
	var entries []string
	size := 0
	for _, s := range list {
		if !s.Enabled {
			continue
		}
		line := fmt.Sprintf("- %s: %s (file: %s)", s.Name, s.Description, s.Path)
		if size+len(line)+1 > MaxInstructionBytes {
			omitted++
			continue
		}
		size += len(line) + 1
		entries = append(entries, line)
	}
	if len(entries) == 0 {
		return "", omitted
	}
	var b strings.Builder
	b.WriteString("<skills_instructions>\n## Skills\n")
	b.WriteString("Skills are task guides the user keeps on disk, each in a SKILL.md file. These are available in this session (name: what it is for, and where its SKILL.md is):\n")
	b.WriteString(strings.Join(entries, "\n"))
	b.WriteString("\n### Using a skill\n")
	b.WriteString("- Use a skill when the user names it (for example `$name`) or when the task clearly matches its description; use every skill that applies, and only for the turn that calls for it.\n")
	b.WriteString("- Before acting on it, read its SKILL.md to the end with your file tools (it is not in this message), then follow it.\n")
	b.WriteString("- Paths written in a SKILL.md are relative to the directory that holds it. Open the extra files it points to only when the task needs them; prefer running its scripts and reusing its templates over rewriting them.\n")
	b.WriteString("- If a skill's file cannot be read or does not fit the task, say so in a line and carry on without it.\n")
	b.WriteString("</skills_instructions>")
	return b.String(), omitted
}
