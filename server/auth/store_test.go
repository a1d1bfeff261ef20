package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSaveReadRemove(t *testing.T) {
	home := t.TempDir()
	s := Open(home)
	if k := s.APIKey(); k != "" || s.Problem() != "" {
		t.Fatalf("empty home: key %q problem %q", k, s.Problem())
	}
	if err := s.SaveAPIKey("sk-one"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The reference's file, byte for byte.
	if want := "{\n  \"auth_mode\": \"apikey\",\n  \"OPENAI_API_KEY\": \"sk-one\"\n}"; string(data) != want {
		t.Fatalf("auth.json = %q, want %q", data, want)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	if k := s.APIKey(); k != "sk-one" {
		t.Fatalf("key %q", k)
	}
	if err := s.SaveAPIKey("sk-two"); err != nil || s.APIKey() != "sk-two" {
		t.Fatalf("second save: %v, key %q", err, s.APIKey())
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
	if err := s.Remove(); err != nil || s.APIKey() != "" {
		t.Fatalf("remove: %v, key %q", err, s.APIKey())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("auth.json still there: %v", err)
	}
	if err := s.Remove(); err != nil {
		t.Fatalf("second remove: %v", err)
	}
}

// Another process signing in or out (the reference's `codex login` on a
// shared home) is seen without a restart.
func TestChangesOnDiskAreSeen(t *testing.T) {
	home := t.TempDir()
	s := Open(home)
	if s.APIKey() != "" {
		t.Fatal("key in an empty home")
	}
	path := filepath.Join(home, FileName)
	if err := os.WriteFile(path, []byte(`{"auth_mode":"apikey","OPENAI_API_KEY":"sk-outside"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if k := s.APIKey(); k != "sk-outside" {
		t.Fatalf("key %q", k)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if k := s.APIKey(); k != "" {
		t.Fatalf("key %q after removal", k)
	}
}

func TestUnusableFiles(t *testing.T) {
	for name, body := range map[string]string{
		"chatgpt":            `{"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{"access_token":"at"}}`,
		"chatgpt with a key": `{"auth_mode":"chatgpt","OPENAI_API_KEY":"sk-exchanged","tokens":{"access_token":"at"}}`,
		"no key":             `{}`,
		"not json":           `sk-secret-in-a-broken-file`,
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, FileName), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			s := Open(home)
			if k := s.APIKey(); k != "" {
				t.Fatalf("key %q", k)
			}
			p := s.Problem()
			if (name == "not json") != (p != "") || strings.Contains(p, "sk-secret") {
				t.Fatalf("problem %q", p)
			}
		})
	}
}

func TestSaveFailsCleanly(t *testing.T) {
	home := t.TempDir()
	// auth.json is a directory: the rename cannot replace it.
	if err := os.Mkdir(filepath.Join(home, FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	s := Open(home)
	err := s.SaveAPIKey("sk-secret")
	if err == nil || strings.Contains(err.Error(), "sk-secret") {
		t.Fatalf("err %v", err)
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 1 {
		t.Fatalf("temporary file left behind: %v", entries)
	}
}

// Readers (every model request) and writers (sign-in, sign-out) at once:
// a reader sees one of the keys written or none, never a torn one.
func TestConcurrentUse(t *testing.T) {
	s := Open(t.TempDir())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			if i%2 == 0 {
				_ = s.SaveAPIKey("sk-" + strings.Repeat("x", i))
			} else {
				_ = s.Remove()
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		if k := s.APIKey(); k != "" && strings.Trim(k, "skx-") != "" {
			t.Fatalf("torn key %q", k)
		}
	}
}

// A key replaced by one of the same length at once (the same size, maybe
// the same mtime tick) is seen: the rename makes a new inode.
func TestSameSizeRewriteIsSeen(t *testing.T) {
	home := t.TempDir()
	s := Open(home)
	for _, k := range []string{"sk-aaaa", "sk-bbbb", "sk-cccc"} {
		if err := s.SaveAPIKey(k); err != nil {
			t.Fatal(err)
		}
		// Another process's write: the same file format, by rename.
		other := Open(home)
		if got := other.APIKey(); got != k {
			t.Fatalf("other store: %q, want %q", got, k)
		}
	}
	// A second store that read the first key notices each rewrite, even
	// when the clock did not move (a coarse file system): same size,
	// same mtime.
	tick := time.Unix(1700000000, 0)
	if err := os.Chtimes(s.Path(), tick, tick); err != nil {
		t.Fatal(err)
	}
	reader := Open(home)
	_ = reader.APIKey()
	for _, k := range []string{"sk-dddd", "sk-eeee"} {
		if err := Open(home).SaveAPIKey(k); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(s.Path(), tick, tick); err != nil {
			t.Fatal(err)
		}
		if got := reader.APIKey(); got != k {
			t.Fatalf("reader: %q, want %q", got, k)
		}
	}
}
