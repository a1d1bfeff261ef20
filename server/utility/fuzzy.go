package utility

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"unicode/utf8"

	"github.com/sahilm/fuzzy"

	"github.com/agentd-dev/agentd/protocol"
	"github.com/agentd-dev/agentd/server/rpc"
)

// fuzzyFileSearch bounds.
const (
	// fuzzyMaxVisited bounds the entries walked per request, over all
	// roots, so that a search of a home directory still answers quickly.
	fuzzyMaxVisited = 50_000
	// fuzzyMaxResults is how many matches are returned, best first.
	fuzzyMaxResults = 50
	// fuzzyScoreOffset is added to the matcher's score (negative for
	// long paths with few matches) to make it an unsigned number, as the
	// wire wants. Only the order of scores means anything.
	fuzzyScoreOffset = 1000
)

// searchKey names a search that a later one with the same cancellation
// token (on the same connection) cancels.
type searchKey struct {
	conn  uint64
	token string
}

// fuzzySearch is a running search that can be cancelled.
type fuzzySearch struct {
	cancel context.CancelFunc
}

// fuzzyFileSearch matches query against the paths under roots (relative
// to their root) and returns the best matches. A later request with the
// same cancellationToken cancels this one, which then answers with no
// files.
func (u *utility) fuzzyFileSearch(ctx context.Context, r *rpc.Request, p *protocol.FuzzyFileSearchParams) (*protocol.FuzzyFileSearchResponse, error) {
	return u.search(ctx, r.Conn().ID(), p)
}

// search is fuzzyFileSearch for connection conn.
func (u *utility) search(ctx context.Context, conn uint64, p *protocol.FuzzyFileSearchParams) (*protocol.FuzzyFileSearchResponse, error) {
	ctx, done := u.startSearch(ctx, conn, p.CancellationToken)
	defer done()
	out := protocol.FuzzyFileSearchResponse{Files: protocol.List[protocol.FuzzyFileSearchResult]{}}
	if p.Query == "" {
		return &out, nil
	}
	roots := make([]string, 0, len(p.Roots))
	for _, r := range p.Roots {
		if !filepath.IsAbs(r) {
			r = filepath.Join(u.cwd, r)
		}
		r = filepath.Clean(r)
		if err := u.roots().check("fuzzyFileSearch", r, true); err != nil {
			return nil, err
		}
		roots = append(roots, r)
	}
	cands := walkRoots(ctx, roots, fuzzyMaxVisited)
	matches := fuzzy.FindFromIterNoSort(p.Query, func(yield func(string) bool) {
		for i, cand := range cands {
			// The matcher cannot be interrupted; its input can.
			if i%1024 == 0 && ctx.Err() != nil {
				return
			}
			if !yield(cand.rel) {
				return
			}
		}
	})
	if ctx.Err() != nil {
		return &out, nil
	}
	sort.SliceStable(matches, func(i, j int) bool {
		a, b := matches[i], matches[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if len(a.Str) != len(b.Str) {
			return len(a.Str) < len(b.Str)
		}
		return a.Str < b.Str
	})
	for _, m := range matches[:min(len(matches), fuzzyMaxResults)] {
		cand := cands[m.Index]
		kind := protocol.MatchFile
		if cand.dir {
			kind = protocol.MatchDirectory
		}
		out.Files = append(out.Files, protocol.FuzzyFileSearchResult{
			Root: cand.root, Path: cand.rel, MatchType: kind, FileName: filepath.Base(cand.rel),
			Score: uint32(max(m.Score+fuzzyScoreOffset, 0)), Indices: runeIndices(cand.rel, m.MatchedIndexes),
		})
	}
	return &out, nil
}

// startSearch registers a search under its token, cancelling the one the
// token named before. done unregisters it.
func (u *utility) startSearch(ctx context.Context, conn uint64, token *string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	if token == nil {
		return ctx, cancel
	}
	key := searchKey{conn: conn, token: *token}
	s := &fuzzySearch{cancel: cancel}
	u.mu.Lock()
	if prev := u.searches[key]; prev != nil {
		prev.cancel()
	}
	u.searches[key] = s
	u.mu.Unlock()
	return ctx, func() {
		u.mu.Lock()
		if u.searches[key] == s {
			delete(u.searches, key)
		}
		u.mu.Unlock()
		cancel()
	}
}

// runeIndices turns the matcher's byte offsets into character indices.
func runeIndices(s string, byteIdx []int) []uint32 {
	out := make([]uint32, 0, len(byteIdx))
	for _, b := range byteIdx {
		out = append(out, uint32(utf8.RuneCountInString(s[:b])))
	}
	return out
}

// searchCandidate is a path found under a root.
type searchCandidate struct {
	root, rel string
	dir       bool
}

// walkRoots lists the files and directories under roots, skipping .git
// and what .gitignore files exclude, visiting at most limit entries. A
// root that cannot be read is skipped.
func walkRoots(ctx context.Context, roots []string, limit int) []searchCandidate {
	var out []searchCandidate
	visited := 0
	errStop := errors.New("stop")
	for _, root := range roots {
		ign := newIgnoreStack()
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == root {
					return err
				}
				return nil // unreadable entries are left out
			}
			if visited++; visited > limit || (visited%256 == 0 && ctx.Err() != nil) {
				return errStop
			}
			if path == root {
				ign.enter(root, "")
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return nil
			}
			rel = filepath.ToSlash(rel)
			isDir := d.IsDir()
			if isDir && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if ign.ignored(rel, isDir) {
				if isDir {
					return filepath.SkipDir
				}
				return nil
			}
			if isDir {
				ign.enter(path, rel)
			}
			out = append(out, searchCandidate{root: root, rel: rel, dir: isDir})
			return nil
		})
		if errors.Is(err, errStop) {
			break
		}
	}
	return out
}
