package model

import (
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// DefaultLimitID is the rate-limit bucket named by the x-codex-* headers.
const DefaultLimitID = "codex"

// RateLimitSnapshot is the rate-limit state a provider reported in the
// headers of a response: the x-codex-primary-*, x-codex-secondary-* and
// x-codex-credits-* headers of OpenAI's Codex backend, read as the
// reference reads them. A provider that sends none gives an empty
// snapshot of the default bucket.
type RateLimitSnapshot struct {
	// LimitID names the bucket ("codex", or another family's id such as
	// "codex_other" for x-codex-other-primary-used-percent).
	LimitID string
	// LimitName is x-<family>-limit-name, "" when absent.
	LimitName string
	// Primary and Secondary are the two windows, nil when not reported.
	Primary, Secondary *RateLimitWindow
	// Credits is nil unless both x-codex-credits-has-credits and
	// x-codex-credits-unlimited are booleans.
	Credits *Credits
}

// RateLimitWindow is the use of one rate-limit window.
type RateLimitWindow struct {
	UsedPercent float64
	// WindowMinutes is the window's length, nil when not reported.
	WindowMinutes *int64
	// ResetsAt is when the window resets, in Unix seconds, nil when not
	// reported.
	ResetsAt *int64
}

// Credits is the account's credit balance.
type Credits struct {
	HasCredits bool
	Unlimited  bool
	// Balance is the balance as the provider wrote it, "" when absent.
	Balance string
}

// ParseRateLimits reads a response's rate-limit headers. Besides the
// default x-codex-* family, a header x-<id>-primary-used-percent names
// another bucket; as the reference, the snapshot reported is the last one
// with data, buckets taken in the order of their ids after the default.
func ParseRateLimits(h http.Header) RateLimitSnapshot {
	snap := parseFamily(h, DefaultLimitID)
	var others []string
	for name := range h {
		lower := strings.ToLower(name)
		rest, ok := strings.CutSuffix(lower, "-primary-used-percent")
		if !ok {
			continue
		}
		rest, ok = strings.CutPrefix(rest, "x-")
		if !ok {
			continue
		}
		if id := normalizeLimitID(rest); id != DefaultLimitID {
			others = append(others, id)
		}
	}
	sort.Strings(others)
	for _, id := range others {
		if s := parseFamily(h, id); s.Primary != nil || s.Secondary != nil || s.Credits != nil {
			snap = s
		}
	}
	return snap
}

// parseFamily reads the headers of the bucket id.
func parseFamily(h http.Header, id string) RateLimitSnapshot {
	prefix := "x-" + strings.ReplaceAll(id, "_", "-")
	s := RateLimitSnapshot{
		LimitID:   id,
		LimitName: strings.TrimSpace(h.Get(prefix + "-limit-name")),
		Primary:   parseWindow(h, prefix+"-primary"),
		Secondary: parseWindow(h, prefix+"-secondary"),
	}
	hasCredits, ok1 := headerBool(h, "x-codex-credits-has-credits")
	unlimited, ok2 := headerBool(h, "x-codex-credits-unlimited")
	if ok1 && ok2 {
		s.Credits = &Credits{HasCredits: hasCredits, Unlimited: unlimited, Balance: strings.TrimSpace(h.Get("x-codex-credits-balance"))}
	}
	return s
}

// parseWindow reads <prefix>-used-percent, -window-minutes and -reset-at.
// A window that is all zero or absent is no window.
func parseWindow(h http.Header, prefix string) *RateLimitWindow {
	used, ok := headerFloat(h, prefix+"-used-percent")
	if !ok {
		return nil
	}
	w := &RateLimitWindow{UsedPercent: used, WindowMinutes: headerInt(h, prefix+"-window-minutes"), ResetsAt: headerInt(h, prefix+"-reset-at")}
	if used == 0 && (w.WindowMinutes == nil || *w.WindowMinutes == 0) && w.ResetsAt == nil {
		return nil
	}
	return w
}

func normalizeLimitID(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
}

// headerFloat parses a decimal number (no hex, no infinities).
func headerFloat(h http.Header, name string) (float64, bool) {
	v := h.Get(name)
	if v == "" || strings.ContainsAny(v, "xX_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func headerInt(h http.Header, name string) *int64 {
	n, err := strconv.ParseInt(h.Get(name), 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

// headerBool accepts true/false in any case, and 1/0.
func headerBool(h http.Header, name string) (bool, bool) {
	switch v := h.Get(name); {
	case strings.EqualFold(v, "true") || v == "1":
		return true, true
	case strings.EqualFold(v, "false") || v == "0":
		return false, true
	}
	return false, false
}
