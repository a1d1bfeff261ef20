package threads

import (
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/agentd-dev/agentd/protocol"
)

// pageModels cuts one page out of model/list's models, as the reference
// does: the cursor is the offset of the page's first model, in decimal
// (the previous page's nextCursor); limit defaults to every model and is
// at least 1; nextCursor is the offset after the page, or null on the last
// page. A cursor that is not a number answers `invalid cursor: <cursor>`,
// one past the end `cursor <n> exceeds total models <total>`; a cursor
// equal to the total gives an empty last page. Hidden models are left out
// unless includeHidden is true.
func pageModels(all protocol.List[protocol.Model], p *protocol.ModelListParams) (*protocol.ModelListResponse, error) {
	models := protocol.List[protocol.Model]{}
	for _, m := range all {
		if !m.Hidden || (p.IncludeHidden != nil && *p.IncludeHidden) {
			models = append(models, m)
		}
	}
	total := len(models)
	if total == 0 {
		return &protocol.ModelListResponse{Data: models}, nil
	}
	start := 0
	if p.Cursor != nil {
		n, ok := parseOffset(*p.Cursor)
		if !ok {
			return nil, protocol.InvalidRequest("invalid cursor: %s", protocol.Cut(*p.Cursor))
		}
		if n > uint64(total) {
			return nil, protocol.InvalidRequest("cursor %d exceeds total models %d", n, total)
		}
		start = int(n)
	}
	end := start + pageSize(p.Limit, total-start)
	out := &protocol.ModelListResponse{Data: models[start:end]}
	if end < total {
		next := strconv.Itoa(end)
		out.NextCursor = &next
	}
	return out, nil
}

// pageLoadedIDs cuts one page out of thread/loaded/list's ids (sorted), as
// the reference does: the cursor is a thread id (the previous page's last
// one, its nextCursor) and the page starts after it, at the first id
// greater than it, whether or not that thread is still loaded; limit
// defaults to every id and is at least 1; nextCursor is null on the last
// page. A cursor that is not a UUID answers `invalid cursor: <cursor>`,
// unless no thread is loaded (then the answer is an empty list, whatever
// the cursor).
func pageLoadedIDs(ids []string, p *protocol.ThreadLoadedListParams) (*protocol.ThreadLoadedListResponse, error) {
	total := len(ids)
	if total == 0 {
		return &protocol.ThreadLoadedListResponse{Data: protocol.List[string]{}}, nil
	}
	start := 0
	if p.Cursor != nil {
		id, err := uuid.Parse(*p.Cursor)
		if err != nil {
			return nil, protocol.InvalidRequest("invalid cursor: %s", protocol.Cut(*p.Cursor))
		}
		after := id.String()
		start = sort.SearchStrings(ids, after)
		if start < total && ids[start] == after {
			start++
		}
	}
	end := start + pageSize(p.Limit, total-start)
	out := &protocol.ThreadLoadedListResponse{Data: protocol.List[string](ids[start:end])}
	if end < total {
		next := ids[end-1]
		out.NextCursor = &next
	}
	return out, nil
}

// pageSize is how many of the left items a page with this limit holds:
// all of them without a limit, at least one (a limit of 0 counts as 1).
func pageSize(limit *uint32, left int) int {
	n := left
	if limit != nil {
		n = max(int(*limit), 1)
	}
	return min(n, left)
}

// parseOffset parses a decimal offset as Rust's usize parser does: digits
// only, one leading '+' allowed, at most 64 bits.
func parseOffset(s string) (uint64, bool) {
	digits := strings.TrimPrefix(s, "+")
	if digits == "" || digits[0] < '0' || digits[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	return n, err == nil
}
