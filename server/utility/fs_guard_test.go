package utility

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/config"
)

// The guard is tested as a function over paths: nothing here removes or
// writes anything outside the test's temporary tree.
func TestGuardRefusesVitalPaths(t *testing.T) {
	tmp := t.TempDir()
	agentdHome := filepath.Join(tmp, "state", "agentd")
	if err := os.MkdirAll(agentdHome, 0o700); err != nil {
		t.Fatal(err)
	}
	rootLink := filepath.Join(tmp, "to-root")
	homeLink := filepath.Join(tmp, "to-home")
	if err := os.Symlink("/", rootLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(agentdHome, homeLink); err != nil {
		t.Fatal(err)
	}
	g := newGuard("/home/alice", agentdHome)
	for _, tc := range []struct {
		path    string
		follow  bool
		refused bool
	}{
		{"/", false, true},
		{"//", false, true},
		{"/etc", false, true},
		{"/etc/", false, true},
		{"/./usr/../etc", false, true},
		{"/usr", false, true},
		{"/var", false, true},
		{"/tmp", false, true},
		{"/home", false, true},
		{"/home/alice", false, true},
		{"/home/alice/", false, true},
		{agentdHome, false, true},
		{filepath.Dir(agentdHome), false, true},
		{tmp, false, true},
		{filepath.Join(rootLink, "etc"), false, true},
		{filepath.Join(rootLink, "etc"), true, true},
		{rootLink, true, true},
		{homeLink, true, true},

		{"/home/alice/project", false, false},
		{"/etc/hosts.d/x", false, false},
		{"/tmp/some/scratch", false, false},
		{filepath.Join(agentdHome, "sessions"), false, false},
		{filepath.Join(tmp, "other"), false, false},
		{rootLink, false, false}, // removing the link removes only the link
		{homeLink, false, false},
		{"/home/alicia", false, false},
	} {
		if got := g.why(tc.path, tc.follow) != ""; got != tc.refused {
			t.Errorf("%s (follow %v): refused %v, want %v (%q)", tc.path, tc.follow, got, tc.refused, g.why(tc.path, tc.follow))
		}
	}
	if err := g.check("fs/remove", "/etc", false); err == nil || !strings.HasSuffix(err.Error(), " -32600: fs/remove refuses to remove or overwrite /etc: it is a top-level system directory") {
		t.Fatalf("check error: %v", err)
	}
}

func TestRemoveTreeStopsWhenCancelled(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "tree")
	// A link inside the tree points at a sentinel outside it (in the
	// test's own tree): it must go, the sentinel must stay.
	sentinel := filepath.Join(tmp, "outside", "keep")
	if err := os.MkdirAll(filepath.Dir(sentinel), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sentinel, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range 5 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d", j)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(filepath.Dir(sentinel), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := removeTree(ctx, dir); !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("cancelled: %d %v", n, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal("a cancelled remove removed the tree")
	}
	n, err := removeTree(context.Background(), dir)
	if err != nil || n != 20*5+20+1+1 {
		t.Fatalf("removed %d (%v), want %d", n, err, 20*5+20+2)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the tree is still there")
	}
	if _, err := os.Stat(sentinel); err != nil {
		t.Fatal("a link was followed")
	}
}

// A trailing "/" or "/." after a link to a guarded directory does not make
// fs/remove empty the directory (the system would follow the link where
// the guard saw the link itself); nor does "link/..". Everything here is
// in the test's temporary tree, the "home" included.
func TestRemoveThroughALinkSpelling(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	sentinel := filepath.Join(home, "keep")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sentinel, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	u := newUtility(Options{Cwd: tmp, Config: &config.Config{Home: home}})
	for _, spelling := range []string{"/", "/.", "/./", "/sub/.."} {
		link := filepath.Join(tmp, "link")
		if err := os.Symlink(home, link); err != nil {
			t.Fatal(err)
		}
		_, err := u.fsRemove(context.Background(), nil, &protocol.FsRemoveParams{Path: protocol.AbsPath(link + spelling)})
		if _, serr := os.Stat(sentinel); serr != nil {
			t.Fatalf("link%s: the home was emptied (%v)", spelling, err)
		}
		_ = os.Remove(link)
	}
}
