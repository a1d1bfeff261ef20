// Package auth keeps the sign-in of a home directory: the OpenAI API key
// that account/login/start stores in <home>/auth.json, in the reference's
// file format, so that a Codex home and an agentd home can be shared.
//
// The key is a secret: it is never logged and never part of an error.
package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentd-dev/agentd/server/atomicfile"
)

// FileName is the sign-in file's name inside the home directory.
const FileName = "auth.json"

// ModeAPIKey is the auth_mode of an API-key sign-in.
const ModeAPIKey = "apikey"

// file is auth.json. The reference writes more for a ChatGPT sign-in
// (tokens, last_refresh); agentd reads the API key only.
type file struct {
	AuthMode string  `json:"auth_mode,omitempty"`
	APIKey   *string `json:"OPENAI_API_KEY"`
}

// Store is the sign-in of one home. Its methods are safe for concurrent
// use. It reads auth.json again whenever the file changed on disk (another
// process signed in or out), so every caller sees the current key.
type Store struct {
	path string

	mu  sync.Mutex
	key string
	// seen identifies the version of the file key was read from; ok is
	// false until the file was looked at once.
	seen atomicfile.Stamp
	ok   bool
	// problem is why the file could not be read, "" when it could.
	problem string
}

// Open returns the store of home. It does not touch the disk.
func Open(home string) *Store {
	return &Store{path: filepath.Join(home, FileName)}
}

// Path returns the sign-in file's path.
func (s *Store) Path() string { return s.path }

// APIKey returns the stored API key, "" when there is none (no file, a
// ChatGPT sign-in, or a file that cannot be read: Problem says why).
func (s *Store) APIKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshLocked()
	return s.key
}

// Problem says why auth.json could not be used, "" when it could (or
// there is none). The text names the file, never its content.
func (s *Store) Problem() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshLocked()
	return s.problem
}

// refreshLocked reads the file again when it changed since it was last
// read.
func (s *Store) refreshLocked() {
	st, err := os.Stat(s.path)
	now := atomicfile.Stamp{}
	if err == nil {
		now = atomicfile.StampOf(st)
	}
	if s.ok && now == s.seen {
		return
	}
	s.seen, s.ok = now, true
	s.key, s.problem = "", ""
	if !now.Exists {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.problem = fmt.Sprintf("cannot read %s: %v", s.path, err)
		}
		return
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		s.problem = fmt.Sprintf("cannot read %s: %v", s.path, err)
		return
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		// The decoder's error can quote the file; the file holds a secret.
		s.problem = fmt.Sprintf("%s is not a valid sign-in file (JSON object with OPENAI_API_KEY)", s.path)
		return
	}
	// A ChatGPT sign-in (of the reference, in a shared home) may carry
	// a key too; agentd does not use that sign-in.
	if f.APIKey != nil && (f.AuthMode == "" || f.AuthMode == ModeAPIKey) {
		s.key = *f.APIKey
	}
}

// SaveAPIKey stores key as the API-key sign-in, replacing any other:
// written to a temporary file created with mode 0600, synced, then
// renamed over auth.json, so that a reader sees the old file or the new
// one, never part of one.
func (s *Store) SaveAPIKey(key string) error {
	data, err := json.MarshalIndent(file{AuthMode: ModeAPIKey, APIKey: &key}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the sign-in: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := atomicfile.Write(s.path, data, 0o600); err != nil {
		return fmt.Errorf("saving the sign-in to %s: %w", s.path, err)
	}
	s.ok = false // read back on next use, with the new file's stamp
	return nil
}

// Remove deletes the stored sign-in; no file is not an error.
func (s *Store) Remove() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ok = false
	if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the sign-in %s: %w", s.path, err)
	}
	return nil
}
