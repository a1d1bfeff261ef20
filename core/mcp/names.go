package mcp

import (
	"crypto/sha1"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
)

// How agentd names MCP tools for the model. The facts are the
// reference's: a tool is "mcp__<server>__<tool>", each part with every
// character outside [A-Za-z0-9_] replaced by "_"; servers (or tools of one
// server) whose names become equal that way each get "_" and the first 12
// hex digits of a SHA-1 of their raw identity appended; a name longer than
// the Responses API's 64 bytes keeps its head and gets the same kind of
// suffix. The reference (0.169) sends each server's tools as a "namespace"
// tool; agentd flattens them into plain functions, which every Responses
// model accepts, and takes a call in either form (see Lookup).
const (
	toolPrefix    = "mcp__"
	nameDelimiter = "__"
	maxToolName   = 64
	hashLen       = 12
)

// sanitizeName replaces every character the model's tool names may not
// hold with "_".
func sanitizeName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

func hashSuffix(identity string) string {
	sum := sha1.Sum([]byte(identity))
	return "_" + hex.EncodeToString(sum[:])[:hashLen]
}

// nsIdentity and toolIdentity are the raw identities hashed to tell
// colliding names apart (the reference's, so that the suffixes match).
func nsIdentity(server string) string { return server + "\x00" + server + "\x00" }

func toolIdentity(server, tool string) string {
	return nsIdentity(server) + "\x00" + tool + "\x00" + tool
}

// toolRef is a server's tool, by the server's own names.
type toolRef struct{ server, tool string }

// qualify gives every tool its model-facing name: unique, at most 64
// bytes, stable for the same set of servers and tools.
func qualify(refs []toolRef) map[toolRef]string {
	// Namespaces: one per server, hashed where two servers collide.
	nsOf := map[string]string{}
	byNS := map[string][]string{}
	for _, r := range refs {
		if _, ok := nsOf[r.server]; ok {
			continue
		}
		ns := sanitizeName(r.server)
		nsOf[r.server] = ns
		byNS[ns] = append(byNS[ns], r.server)
	}
	for _, servers := range byNS {
		if len(servers) > 1 {
			for _, s := range servers {
				nsOf[s] += hashSuffix(nsIdentity(s))
			}
		}
	}
	// Tool parts, hashed where two tools of a namespace collide.
	type cand struct {
		ref      toolRef
		ns, name string
		identity string
	}
	cands := make([]cand, 0, len(refs))
	byName := map[[2]string]int{}
	for _, r := range refs {
		c := cand{ref: r, ns: nsOf[r.server], name: sanitizeName(r.tool), identity: toolIdentity(r.server, r.tool)}
		byName[[2]string{c.ns, c.name}]++
		cands = append(cands, c)
	}
	for i := range cands {
		if byName[[2]string{cands[i].ns, cands[i].name}] > 1 {
			cands[i].name += hashSuffix(cands[i].identity)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].identity < cands[j].identity })
	used := map[string]bool{}
	out := make(map[toolRef]string, len(cands))
	for _, c := range cands {
		out[c.ref] = uniqueName(toolPrefix+c.ns+nameDelimiter, c.name, c.identity, used)
	}
	return out
}

// uniqueName joins prefix and name, or, when that is too long or taken,
// fits them with a hash suffix (of identity, then of identity and an
// attempt number) into 64 bytes.
func uniqueName(prefix, name, identity string, used map[string]bool) string {
	if full := prefix + name; len(full) <= maxToolName && !used[full] {
		used[full] = true
		return full
	}
	for attempt := 0; ; attempt++ {
		id := identity
		if attempt > 0 {
			id += "\x00" + strconv.Itoa(attempt)
		}
		suffix := hashSuffix(id)
		var full string
		if room := maxToolName - len(prefix); room >= len(suffix) {
			full = prefix + truncate(name, room-len(suffix)) + suffix
		} else {
			full = truncate(prefix, maxToolName-len(suffix)) + suffix
		}
		if !used[full] {
			used[full] = true
			return full
		}
	}
}

// truncate cuts s to at most n bytes; sanitized names are ASCII.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// flatName is the function name a call in the namespace form stands for:
// the reference sends namespace "mcp__<server>" and the tool's own part.
func flatName(namespace, name string) string {
	return strings.TrimSuffix(namespace, nameDelimiter) + nameDelimiter + name
}
