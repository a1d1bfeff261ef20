package core

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
	"github.com/agentd-dev/agentd/core/projectdoc"
)

// baseInstructions is agentd's own system text, sent as the first
// developer message of a thread.
const baseInstructions = `You are a coding agent running inside agentd, on the user's machine. You help with software tasks in the user's workspace: reading code, running commands, editing files, and explaining what you did.

How to work:
- Look before you change: read the relevant files and run quick commands to understand the situation.
- Use exec_command to run shell commands. Prefer fast, read-only commands (rg, ls, sed -n, git status) to explore.
- Use apply_patch to edit files. Keep changes focused on what was asked; follow the existing style of the code.
- For multi-step work, keep a short plan with update_plan and update it as steps complete.
- Ask with request_user_input only when you cannot proceed without a decision from the user.
- Commands may run in a sandbox and some actions need the user's approval. If something is refused, do not try to get around it; explain what you need instead.
- When you are done, reply briefly: what changed, where, and anything the user should check. Do not paste whole files back.`

// environmentContext describes the turn's environment to the model.
// projectDocText frames the user's AGENTS.md instructions as Codex sends
// them: the home's text, then the project's, under a header that names
// the working directory when the project has some.
func projectDocText(d projectdoc.Doc, cwd string) string {
	if d.Empty() {
		return ""
	}
	header, body := "# AGENTS.md instructions", d.Home
	if d.Project != "" {
		header += " for " + cwd
		if body != "" {
			body += "\n\n--- project-doc ---\n\n"
		}
		body += d.Project
	}
	return header + "\n\n<INSTRUCTIONS>\n" + body + "\n</INSTRUCTIONS>"
}

func environmentContext(tc TurnContext, now time.Time) string {
	var b strings.Builder
	b.WriteString("<environment_context>\n")
	fmt.Fprintf(&b, "  <cwd>%s</cwd>\n", tc.Cwd)
	fmt.Fprintf(&b, "  <shell>%s</shell>\n", shellName())
	fmt.Fprintf(&b, "  <current_date>%s</current_date>\n", now.Format("2006-01-02"))
	fmt.Fprintf(&b, "  <timezone>%s</timezone>\n", timezoneName(now))
	fmt.Fprintf(&b, "  <approval_policy>%s</approval_policy>\n", tc.ApprovalPolicy)
	fmt.Fprintf(&b, "  <sandbox_mode>%s</sandbox_mode>\n", tc.Sandbox.Mode)
	if tc.Sandbox.Mode == policy.SandboxWorkspaceWrite || tc.Sandbox.Mode == policy.SandboxReadOnly {
		net := "restricted"
		if tc.Sandbox.NetworkAccess {
			net = "enabled"
		}
		fmt.Fprintf(&b, "  <network_access>%s</network_access>\n", net)
	}
	if tc.Sandbox.Mode == policy.SandboxWorkspaceWrite {
		b.WriteString("  <writable_roots>\n")
		fmt.Fprintf(&b, "    <root>%s</root>\n", tc.Cwd)
		for _, r := range tc.Sandbox.WritableRoots {
			fmt.Fprintf(&b, "    <root>%s</root>\n", r)
		}
		b.WriteString("  </writable_roots>\n")
	}
	b.WriteString("</environment_context>")
	return b.String()
}

func shellName() string {
	if sh := os.Getenv("SHELL"); sh != "" {
		return filepath.Base(sh)
	}
	return "bash"
}

func timezoneName(now time.Time) string {
	if tz := os.Getenv("TZ"); tz != "" {
		return strings.TrimPrefix(tz, ":")
	}
	if name := now.Location().String(); name != "Local" && name != "" {
		return name
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if i := strings.Index(target, "zoneinfo/"); i >= 0 {
			return target[i+len("zoneinfo/"):]
		}
	}
	return "Etc/UTC"
}

// userInputToResponseItem builds the user message the model sees. Each
// image is framed by tags that number it in the message (and name its
// file); a local image not read beforehand (PrepareImages) is read now,
// and one that cannot be is replaced by a note saying why.
func userInputToResponseItem(in []UserInput) model.ResponseItem {
	parts := make([]model.ContentPart, 0, len(in))
	images := 0
	for _, u := range in {
		switch u.Kind {
		case InputText:
			parts = append(parts, model.ContentPart{Type: "input_text", Text: u.Text})
		case InputImage:
			images++
			parts = append(parts, imageParts(images, "", u.ImageURL, u.Detail)...)
		case InputLocalImage:
			data := u.ImageURL
			if data == "" {
				var err error
				if data, err = readImage(u.Path); err != nil {
					parts = append(parts, model.ContentPart{Type: "input_text", Text: fmt.Sprintf("[the image %s could not be attached: %v]", u.Path, err)})
					continue
				}
			}
			images++
			parts = append(parts, imageParts(images, u.Path, data, u.Detail)...)
		case InputSkill, InputMention:
			parts = append(parts, model.ContentPart{Type: "input_text", Text: fmt.Sprintf("[%s %s: %s]", u.Kind, u.Name, u.Path)})
		}
	}
	return model.NewMessage(newMessageID(), "user", parts...)
}
