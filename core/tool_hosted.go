package core

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd-dev/agentd/core/model"
	"github.com/agentd-dev/agentd/core/policy"
)

// Hosted tools run at the provider: the model's output carries their
// calls and results as items of their own (web_search_call,
// image_generation_call), which the turn shows as items and keeps in the
// history; nothing is run here.

// WebSearchMode is the web_search setting: whether the model is offered
// the provider's hosted web search, and whether it may reach the live web.
type WebSearchMode string

const (
	// WebSearchDisabled (and "") offers no web search.
	WebSearchDisabled WebSearchMode = "disabled"
	// WebSearchCached searches the provider's cache of the web only.
	WebSearchCached WebSearchMode = "cached"
	// WebSearchLive may fetch live pages.
	WebSearchLive WebSearchMode = "live"
)

// webSearchSpec is the hosted web_search tool for the turn, nil when the
// session offers none. A turn without a sandbox (danger-full-access) may
// search live whatever the setting, as in the reference: nothing else it
// does is confined either.
func (s *Session) webSearchSpec(t *turn) json.RawMessage {
	mode := s.cfg.WebSearch
	if mode != WebSearchCached && mode != WebSearchLive {
		return nil
	}
	live := mode == WebSearchLive || t.tc.Sandbox.Mode == policy.SandboxDangerFullAccess
	spec := struct {
		Type               string   `json:"type"`
		ExternalWebAccess  bool     `json:"external_web_access"`
		SearchContentTypes []string `json:"search_content_types,omitempty"`
	}{Type: "web_search", ExternalWebAccess: live}
	if s.family(t).SearchImages {
		spec.SearchContentTypes = []string{"text", "image"}
	}
	b, _ := json.Marshal(spec)
	return b
}

// webSearchFields is a web_search_call item's action, in the Responses
// API's spelling.
type webSearchFields struct {
	Action *struct {
		Type    string   `json:"type"`
		Query   string   `json:"query"`
		Queries []string `json:"queries"`
		URL     string   `json:"url"`
		Pattern string   `json:"pattern"`
	} `json:"action"`
}

// webSearchItem is the turn item of a web_search_call: started without an
// action (the call is under way), completed with what it did.
func webSearchItem(it model.ResponseItem) WebSearchItem {
	out := WebSearchItem{ID: it.ID(), Action: WebSearchAction{Kind: WebSearchOther}}
	var f webSearchFields
	if it.Decode(&f) != nil || f.Action == nil {
		return out
	}
	a := f.Action
	switch a.Type {
	case "search":
		out.Action = WebSearchAction{Kind: WebSearchSearch, Query: a.Query, Queries: a.Queries}
		out.Query = a.Query
		if out.Query == "" && len(a.Queries) > 0 {
			out.Query = a.Queries[0]
		}
	case "open_page":
		out.Action = WebSearchAction{Kind: WebSearchOpenPage, URL: a.URL}
		out.Query = a.URL
	case "find_in_page", "find":
		out.Action = WebSearchAction{Kind: WebSearchFindInPage, URL: a.URL, Pattern: a.Pattern}
		switch {
		case a.Pattern != "" && a.URL != "":
			out.Query = fmt.Sprintf("'%s' in %s", a.Pattern, a.URL)
		case a.Pattern != "":
			out.Query = "'" + a.Pattern + "'"
		default:
			out.Query = a.URL
		}
	}
	return out
}

// imageGenerationFields is an image_generation_call item.
type imageGenerationFields struct {
	Status        string `json:"status"`
	RevisedPrompt string `json:"revised_prompt"`
	Result        string `json:"result"`
}

// imageGenerationItem is the turn item of an image_generation_call; done
// items are saved (saveGeneratedImage) before they complete.
func imageGenerationItem(it model.ResponseItem) ImageGenerationItem {
	var f imageGenerationFields
	_ = it.Decode(&f)
	return ImageGenerationItem{ID: it.ID(), Status: f.Status, RevisedPrompt: f.RevisedPrompt, Result: f.Result}
}

// saveGeneratedImage writes a generated image where the reference keeps
// them, <dir>/<thread id>/<call id>.png (dir is the home's
// generated_images), and returns its path. The ids are made safe for a
// file name; an image that is not base64 (a data URL, say) is refused.
func (s *Session) saveGeneratedImage(it ImageGenerationItem) (string, error) {
	if s.cfg.GeneratedImagesDir == "" {
		return "", nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(it.Result))
	if err != nil {
		return "", fmt.Errorf("the image is not base64: %w", err)
	}
	if len(b) == 0 {
		return "", fmt.Errorf("the image is empty")
	}
	dir := filepath.Join(s.cfg.GeneratedImagesDir, safeFileName(s.cfg.ThreadID))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, safeFileName(it.ID)+".png")
	tmp, err := os.CreateTemp(dir, ".image-*")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return "", werr
	}
	return path, nil
}

// safeFileName keeps ASCII letters, digits, '-' and '_' and replaces
// anything else with '_', as the reference names its image files.
func safeFileName(s string) string {
	if s == "" {
		return "generated_image"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
