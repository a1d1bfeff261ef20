package utility

import (
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/server/configedit"
)

// trustEdit appends a trusted project to config.toml, keeps a rating the
// file has, and refuses a root that cannot be a key and an edit that would
// rewrite the user's file.
func TestTrustEdit(t *testing.T) {
	edit := func(src, root string) (string, bool, error) {
		t.Helper()
		doc, err := configedit.Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		res, err := trustEdit([]byte(src), doc, root)
		if res == nil {
			return "", false, err
		}
		return string(res.Text), true, err
	}
	src := "# mine\nmodel = \"m\"\n"
	if got, ok, err := edit(src, "/srv/r"); err != nil || !ok || got != src+"\n[projects.\"/srv/r\"]\ntrust_level = \"trusted\"\n" {
		t.Fatalf("appended: %q %v %v", got, ok, err)
	}
	for _, level := range []string{"trusted", "untrusted"} {
		if _, ok, err := edit(src+"[projects.\"/srv/r\"]\ntrust_level = \""+level+"\"\n", "/srv/r"); ok || err != nil {
			t.Fatalf("rated %s: written (%v) or refused (%v)", level, ok, err)
		}
	}
	for _, root := range []string{"/srv/\xff", "/srv/a\x01b", "/" + strings.Repeat("d", maxKeyPathBytes)} {
		if _, ok, err := edit(src, root); ok || err == nil {
			t.Fatalf("root %q: not refused", root)
		}
	}
	if _, ok, err := edit("projects = { \"/a\" = { trust_level = \"untrusted\" } } # inline\n", "/srv/r"); ok || err == nil || !strings.Contains(err.Error(), "in place") {
		t.Fatalf("an inline projects table: written (%v), %v", ok, err)
	}
}
