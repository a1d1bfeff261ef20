package patch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestToolSpecCustom(t *testing.T) {
	var spec struct {
		Type, Name, Description string
		Format                  struct{ Type, Syntax, Definition string }
	}
	if err := json.Unmarshal(ToolSpecCustom(), &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Type != "custom" || spec.Name != "apply_patch" || spec.Format.Type != "grammar" || spec.Format.Syntax != "lark" {
		t.Errorf("spec = %+v", spec)
	}
	if spec.Format.Definition != grammar || !strings.Contains(spec.Description, "*** Begin Patch") {
		t.Error("definition or description missing")
	}
	if strings.Contains(string(ToolSpecCustom()), `\u003c`) {
		t.Error("HTML-escaped description")
	}
}

func TestToolSpecFunction(t *testing.T) {
	var spec struct {
		Type, Name, Description string
		Strict                  bool
		Parameters              struct {
			Type                 string
			Properties           map[string]struct{ Type string }
			Required             []string
			AdditionalProperties bool
		}
	}
	if err := json.Unmarshal(ToolSpecFunction(), &spec); err != nil {
		t.Fatal(err)
	}
	p := spec.Parameters
	if spec.Type != "function" || spec.Name != "apply_patch" || p.Type != "object" || len(p.Properties) != 1 ||
		p.Properties["input"].Type != "string" || len(p.Required) != 1 || p.Required[0] != "input" || p.AdditionalProperties {
		t.Errorf("spec = %+v", spec)
	}
	in, err := InputFromArguments(`{"input":"*** Begin Patch\n*** Delete File: a\n*** End Patch"}`)
	if err != nil || in != "*** Begin Patch\n*** Delete File: a\n*** End Patch" {
		t.Errorf("InputFromArguments = %q, %v", in, err)
	}
	for _, bad := range []string{`{}`, `{"input":3}`, `not json`} {
		if _, err := InputFromArguments(bad); err == nil {
			t.Errorf("InputFromArguments(%s) succeeded", bad)
		}
	}
}

// The grammar is checked by interpreting it: a small reader for the Lark
// subset it uses (rules, "literals", /regex/ terminals, |, (), ?, *, +)
// turns it into a Go regexp, and generates random sentences from it.

type larkNode struct {
	kind  byte // 'l' literal, 'r' regex, 'n' name, '|' alternation, ',' sequence, '?', '*', '+'
	text  string
	items []*larkNode
}

type larkGrammar map[string]*larkNode

func parseLark(t *testing.T, src string) larkGrammar {
	t.Helper()
	g := larkGrammar{}
	tok := regexp.MustCompile(`\s*("(?:[^"\\]|\\.)*"|/(?:[^/\\]|\\.)+/|[A-Za-z_][A-Za-z0-9_]*|[()|?*+])`)
	for n, line := range strings.Split(src, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, body, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("grammar line %d has no rule: %q", n+1, line)
		}
		var toks []string
		rest := body
		for strings.TrimSpace(rest) != "" {
			m := tok.FindStringSubmatchIndex(rest)
			if m == nil || m[0] != 0 {
				t.Fatalf("grammar line %d: cannot read %q", n+1, rest)
			}
			toks = append(toks, rest[m[2]:m[3]])
			rest = rest[m[1]:]
		}
		pos := 0
		node := larkAlt(t, toks, &pos)
		if pos != len(toks) {
			t.Fatalf("grammar line %d: unexpected %q", n+1, toks[pos])
		}
		if _, dup := g[name]; dup {
			t.Fatalf("rule %s defined twice", name)
		}
		g[strings.TrimSpace(name)] = node
	}
	return g
}

func larkAlt(t *testing.T, toks []string, pos *int) *larkNode {
	alt := &larkNode{kind: '|'}
	for {
		seq := &larkNode{kind: ','}
		for *pos < len(toks) && toks[*pos] != "|" && toks[*pos] != ")" {
			var atom *larkNode
			switch tk := toks[*pos]; {
			case tk == "(":
				*pos++
				atom = larkAlt(t, toks, pos)
				if *pos >= len(toks) || toks[*pos] != ")" {
					t.Fatal("unbalanced parenthesis in grammar")
				}
			case tk[0] == '"':
				atom = &larkNode{kind: 'l', text: strings.ReplaceAll(tk[1:len(tk)-1], `\"`, `"`)}
			case tk[0] == '/':
				atom = &larkNode{kind: 'r', text: tk[1 : len(tk)-1]}
			case tk == "?" || tk == "*" || tk == "+":
				t.Fatalf("quantifier %s without operand", tk)
			default:
				atom = &larkNode{kind: 'n', text: tk}
			}
			*pos++
			if *pos < len(toks) && strings.Contains("?*+", toks[*pos]) {
				atom = &larkNode{kind: toks[*pos][0], items: []*larkNode{atom}}
				*pos++
			}
			seq.items = append(seq.items, atom)
		}
		alt.items = append(alt.items, seq)
		if *pos >= len(toks) || toks[*pos] != "|" {
			return alt
		}
		*pos++
	}
}

func (g larkGrammar) regex(t *testing.T, n *larkNode, depth int) string {
	if depth > 50 {
		t.Fatal("grammar is recursive; the test expects a regular grammar")
	}
	switch n.kind {
	case 'l':
		return regexp.QuoteMeta(n.text)
	case 'r':
		return "(?:" + n.text + ")"
	case 'n':
		rule, ok := g[n.text]
		if !ok {
			t.Fatalf("undefined rule %s", n.text)
		}
		return "(?:" + g.regex(t, rule, depth+1) + ")"
	case '|', ',':
		parts := make([]string, len(n.items))
		for i, it := range n.items {
			parts[i] = g.regex(t, it, depth+1)
		}
		if n.kind == ',' {
			return strings.Join(parts, "")
		}
		return "(?:" + strings.Join(parts, "|") + ")"
	default:
		return "(?:" + g.regex(t, n.items[0], depth+1) + ")" + string(n.kind)
	}
}

// generate writes a random sentence of the grammar; terminals come from
// gens.
func (g larkGrammar) generate(b *strings.Builder, n *larkNode, rng *rand.Rand, gens map[string]func() string) {
	switch n.kind {
	case 'l':
		b.WriteString(n.text)
	case 'n':
		if gen, ok := gens[n.text]; ok {
			b.WriteString(gen())
			return
		}
		g.generate(b, g[n.text], rng, gens)
	case ',':
		for _, it := range n.items {
			g.generate(b, it, rng, gens)
		}
	case '|':
		g.generate(b, n.items[rng.IntN(len(n.items))], rng, gens)
	case '?':
		if rng.IntN(2) == 0 {
			g.generate(b, n.items[0], rng, gens)
		}
	case '*', '+':
		k := rng.IntN(4)
		if n.kind == '+' {
			k++
		}
		for range k {
			g.generate(b, n.items[0], rng, gens)
		}
	}
}

func TestGrammarAcceptsPatchesAndParseAcceptsTheGrammar(t *testing.T) {
	g := parseLark(t, grammar)
	re := regexp.MustCompile(`\A` + g.regex(t, g["start"], 0) + `\z`)

	accept := []string{
		validCorpus[0].patch,
		validCorpus[2].patch,
		"*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch",
		"*** Begin Patch\n*** Update File: a\n-x\n+y\n@@\n@@ def f():\n \n-z\n*** End of File\n*** Add File: e\n*** End Patch\n",
	}
	for _, s := range accept {
		if !re.MatchString(s) {
			t.Errorf("grammar rejects a valid patch:\n%s", s)
		}
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse rejects %q: %v", s, err)
		}
	}
	// The grammar keeps the model from a bare blank line in a hunk (Parse
	// is lenient there, reading it as a blank context line).
	if s := "*** Begin Patch\n*** Update File: a\n x\n\n-y\n*** End Patch\n"; re.MatchString(s) {
		t.Errorf("grammar accepts a bare blank line in a hunk")
	}
	reject := []string{
		"*** Begin Patch\n*** Add File: a\n+x\n",                                        // no end
		"*** Begin Patch\n*** End Patch\n",                                              // no file
		"*** Begin Patch\n*** Add File: a\nx\n*** End Patch\n",                          // add line without +
		"*** Begin Patch\n*** Update File: a\n*** End Patch\n",                          // nothing to do
		"*** Begin Patch\n*** Update File: a\n@@ f\n*** End Patch\n",                    // header without lines
		"*** Begin Patch\n*** Update File: a\n-x\n*** End of File\n+y\n*** End Patch\n", // lines after EOF
		"*** Begin Patch\n*** Delete File:  \n*** End Patch\n",                          // blank path
	}
	for _, s := range reject {
		if re.MatchString(s) {
			t.Errorf("grammar accepts an invalid patch:\n%s", s)
		}
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse accepts %q", s)
		}
	}

	// Whatever the grammar lets the model write, Parse must accept.
	rng := rand.New(rand.NewPCG(7, 11))
	const textChars = "ab *-+@#\t\"'{}()é…"
	gens := map[string]func() string{
		"NL": func() string { return "\n" },
		"TEXT": func() string {
			var b strings.Builder
			for range 1 + rng.IntN(12) {
				r := []rune(textChars)
				b.WriteRune(r[rng.IntN(len(r))])
			}
			return b.String()
		},
		"PATH": func() string {
			return []string{"a.txt", "dir/b.go", "/abs/c", "sp ace", "*** odd", "@@x"}[rng.IntN(6)] +
				fmt.Sprint(rng.IntN(3))
		},
	}
	for i := range 3000 {
		var b strings.Builder
		g.generate(&b, g["start"], rng, gens)
		s := b.String()
		if !re.MatchString(s) {
			t.Fatalf("sentence %d does not match its own grammar:\n%s", i, s)
		}
		if _, err := Parse(s); err != nil {
			t.Fatalf("Parse rejects a sentence of the grammar: %v\n%s", err, s)
		}
	}
}
