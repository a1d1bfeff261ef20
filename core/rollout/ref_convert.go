package rollout

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/agentd-dev/agentd/core"
	"github.com/agentd-dev/agentd/core/policy"
)

// Conversions between agentd's values and the reference's spellings of
// them in format 2 records.

// httpErrorKinds are the error kinds whose codex_error_info carries an
// HTTP status: {"http_connection_failed":{"http_status_code":502}}.
var httpErrorKinds = []core.ErrorKind{
	core.KindHTTPConnectionFailed, core.KindStreamConnectionFailed,
	core.KindStreamDisconnected, core.KindTooManyFailedAttempts,
}

// SnakeCase spells a camelCase name (an error kind, a sub-agent kind:
// ThreadSpawn) the reference's snake_case way (thread_spawn).
func SnakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// camelCase undoes SnakeCase.
func camelCase(s string) string {
	var b strings.Builder
	up := false
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

func turnErrorToRef(e core.TurnError) *refTurnError {
	w := &refTurnError{Message: e.Message, AdditionalDetails: e.Details}
	if e.Kind == "" {
		return w
	}
	name := SnakeCase(string(e.Kind))
	if slices.Contains(httpErrorKinds, e.Kind) {
		var inner struct {
			Status *int `json:"http_status_code"`
		}
		if e.HTTPStatus > 0 {
			inner.Status = &e.HTTPStatus
		}
		w.CodexErrorInfo, _ = json.Marshal(map[string]any{name: inner})
	} else {
		w.CodexErrorInfo, _ = json.Marshal(name)
		w.AgentdHTTPStatus = e.HTTPStatus
	}
	return w
}

func (w *refTurnError) turnError() core.TurnError {
	e := core.TurnError{Message: w.Message, Details: w.AdditionalDetails, HTTPStatus: w.AgentdHTTPStatus}
	info := bytes.TrimSpace(w.CodexErrorInfo)
	switch {
	case len(info) == 0 || string(info) == "null":
	case info[0] == '"':
		var name string
		if json.Unmarshal(info, &name) == nil {
			e.Kind = core.ErrorKind(camelCase(name))
		}
	case info[0] == '{':
		var m map[string]struct {
			Status *int `json:"http_status_code"`
		}
		if json.Unmarshal(info, &m) == nil {
			for name, v := range m {
				e.Kind = core.ErrorKind(camelCase(name))
				if v.Status != nil {
					e.HTTPStatus = *v.Status
				}
			}
		}
	}
	return e
}

// Command sources: agentd's names and the reference's.
var execSources = map[core.CommandSource]string{
	core.SourceAgent:            "agent",
	core.SourceUserShell:        "user_shell",
	core.SourceUnifiedExecStart: "unified_exec_startup",
	core.SourceUnifiedExecInput: "unified_exec_interaction",
}

func execSourceToRef(s core.CommandSource) string {
	if r, ok := execSources[s]; ok {
		return r
	}
	return string(s)
}

func execSourceFromRef(s string) core.CommandSource {
	for k, v := range execSources {
		if v == s {
			return k
		}
	}
	if s == "" {
		return core.SourceAgent
	}
	return core.CommandSource(camelCase(s))
}

// statusToRef is a finished tool item's status as the reference spells it.
func statusToRef(s core.ItemStatus) string {
	return SnakeCase(string(s))
}

func statusFromRef(s string) core.ItemStatus {
	return core.ItemStatus(camelCase(s))
}

func actionsToRef(actions []policy.CommandAction) []refParsedCmd {
	out := make([]refParsedCmd, 0, len(actions))
	for _, a := range actions {
		out = append(out, refParsedCmd{Type: SnakeCase(string(a.Kind)), Cmd: a.Command, Name: a.Name, Path: a.Path, Query: a.Query})
	}
	return out
}

func actionsFromRef(cmds []refParsedCmd) []policy.CommandAction {
	var out []policy.CommandAction
	for _, c := range cmds {
		out = append(out, policy.CommandAction{
			Kind: policy.CommandActionKind(camelCase(c.Type)), Command: c.Cmd, Name: c.Name, Path: c.Path, Query: c.Query,
		})
	}
	return out
}

func changesToRef(changes []core.FileChange) map[string]refFileChange {
	out := make(map[string]refFileChange, len(changes))
	for _, c := range changes {
		diff := c.Diff
		w := refFileChange{Type: string(c.Kind)}
		switch c.Kind {
		case core.ChangeUpdate:
			w.UnifiedDiff = &diff
			if c.MovePath != "" {
				mp := c.MovePath
				w.MovePath = &mp
			}
		default:
			w.Content = &diff
		}
		out[c.Path] = w
	}
	return out
}

// changesFromRef lists the changes sorted by path, as the reference shows
// them (the record keeps them in a map).
func changesFromRef(m map[string]refFileChange) []core.FileChange {
	out := make([]core.FileChange, 0, len(m))
	for p, w := range m {
		c := core.FileChange{Path: p, Kind: core.FileChangeKind(w.Type)}
		switch {
		case w.UnifiedDiff != nil:
			c.Diff = *w.UnifiedDiff
		case w.Content != nil:
			c.Diff = *w.Content
		}
		if w.MovePath != nil {
			c.MovePath = *w.MovePath
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b core.FileChange) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Input kinds: agentd's names and the reference's.
var inputKinds = map[core.UserInputKind]string{
	core.InputText:       "text",
	core.InputImage:      "image",
	core.InputLocalImage: "local_image",
	core.InputSkill:      "skill",
	core.InputMention:    "mention",
}

func textElementsToRef(tes []core.TextElement) []refTextElement {
	out := make([]refTextElement, 0, len(tes))
	for _, te := range tes {
		out = append(out, refTextElement{ByteRange: refByteRange{Start: te.Start, End: te.End}, Placeholder: te.Placeholder})
	}
	return out
}

func textElementsFromRef(tes []refTextElement) []core.TextElement {
	var out []core.TextElement
	for _, te := range tes {
		out = append(out, core.TextElement{Start: te.ByteRange.Start, End: te.ByteRange.End, Placeholder: te.Placeholder})
	}
	return out
}

func inputsToRef(in []core.UserInput) []refUserInput {
	out := make([]refUserInput, 0, len(in))
	for _, u := range in {
		kind, ok := inputKinds[u.Kind]
		if !ok {
			kind = string(u.Kind)
		}
		w := refUserInput{Type: kind, Text: u.Text, ImageURL: u.ImageURL, Path: u.Path, Name: u.Name, Detail: u.Detail}
		if len(u.TextElements) > 0 {
			w.TextElements = textElementsToRef(u.TextElements)
		}
		out = append(out, w)
	}
	return out
}

func inputsFromRef(in []refUserInput) []core.UserInput {
	out := make([]core.UserInput, 0, len(in))
	for _, w := range in {
		kind := core.UserInputKind(camelCase(w.Type))
		for k, v := range inputKinds {
			if v == w.Type {
				kind = k
			}
		}
		out = append(out, core.UserInput{
			Kind: kind, Text: w.Text, TextElements: textElementsFromRef(w.TextElements),
			ImageURL: w.ImageURL, Path: w.Path, Name: w.Name, Detail: w.Detail,
		})
	}
	return out
}

// userMessageToRef fills a user_message event. message, images and
// local_images say a text followed by images the way the reference does;
// any other input is also kept whole in agentd_content.
func userMessageToRef(um core.UserMessageItem) refUserMessage {
	w := refUserMessage{
		Type: evUserMessage, Images: []string{}, LocalImages: []string{}, TextElements: []refTextElement{},
		AgentdItemID: um.ID, AgentdClientID: um.ClientID,
	}
	var texts []string
	lossy := false
	for i, in := range um.Content {
		switch in.Kind {
		case core.InputText:
			texts = append(texts, in.Text)
			// The reference's one text comes first and is never blank.
			lossy = lossy || i > 0 || strings.TrimSpace(in.Text) == ""
			w.TextElements = textElementsToRef(in.TextElements)
		case core.InputImage:
			w.Images = append(w.Images, in.ImageURL)
			lossy = lossy || in.Detail != "" || len(w.LocalImages) > 0
		case core.InputLocalImage:
			w.LocalImages = append(w.LocalImages, in.Path)
			lossy = lossy || in.Detail != ""
		default:
			lossy = true
		}
	}
	w.Message = strings.Join(texts, "\n")
	if len(texts) > 1 {
		w.TextElements = []refTextElement{} // their offsets are per text
	}
	if lossy {
		w.AgentdContent = inputsToRef(um.Content)
	}
	return w
}

// userMessageFromRef rebuilds the item of a user_message event, the way
// the reference does when agentd_content is absent: the message as one
// text (unless blank), then the images, then the local images.
func userMessageFromRef(w *refUserMessage) core.UserMessageItem {
	um := core.UserMessageItem{ID: w.AgentdItemID, ClientID: w.AgentdClientID}
	if len(w.AgentdContent) > 0 {
		um.Content = inputsFromRef(w.AgentdContent)
		return um
	}
	if strings.TrimSpace(w.Message) != "" {
		um.Content = append(um.Content, core.UserInput{Kind: core.InputText, Text: w.Message, TextElements: textElementsFromRef(w.TextElements)})
	}
	for _, u := range w.Images {
		um.Content = append(um.Content, core.UserInput{Kind: core.InputImage, ImageURL: u})
	}
	for _, p := range w.LocalImages {
		um.Content = append(um.Content, core.UserInput{Kind: core.InputLocalImage, Path: p})
	}
	return um
}

// fileURLPath returns the path of a file:// URL (the reference's typed
// command items give their cwd so), or s unchanged.
func fileURLPath(s string) string {
	return strings.TrimPrefix(s, "file://")
}

// webSearchToRef is the typed item of a web search.
func webSearchToRef(v core.WebSearchItem) refWebSearchItem {
	w := refWebSearchItem{Type: "WebSearch", ID: v.ID, Query: v.Query}
	a := v.Action
	switch a.Kind {
	case core.WebSearchSearch:
		w.Action = &refSearchAction{Type: "search", Query: a.Query, Queries: a.Queries}
	case core.WebSearchOpenPage:
		w.Action = &refSearchAction{Type: "open_page", URL: a.URL}
	case core.WebSearchFindInPage:
		w.Action = &refSearchAction{Type: "find_in_page", URL: a.URL, Pattern: a.Pattern}
	default:
		w.Action = &refSearchAction{Type: "other"}
	}
	return w
}

// searchActionFromRef reads a typed item's action.
func searchActionFromRef(a *refSearchAction) core.WebSearchAction {
	if a == nil {
		return core.WebSearchAction{Kind: core.WebSearchOther}
	}
	switch a.Type {
	case "search":
		return core.WebSearchAction{Kind: core.WebSearchSearch, Query: a.Query, Queries: a.Queries}
	case "open_page", "openPage":
		return core.WebSearchAction{Kind: core.WebSearchOpenPage, URL: a.URL}
	case "find_in_page", "findInPage", "find":
		return core.WebSearchAction{Kind: core.WebSearchFindInPage, URL: a.URL, Pattern: a.Pattern}
	}
	return core.WebSearchAction{Kind: core.WebSearchOther}
}

// imageGenerationToRef is the typed item of a generated image.
func imageGenerationToRef(v core.ImageGenerationItem) refImageGenerationItem {
	return refImageGenerationItem{Type: "ImageGeneration", ID: v.ID, Status: v.Status, RevisedPrompt: v.RevisedPrompt, Result: v.Result, SavedPath: v.SavedPath}
}
