package server

import (
	"encoding/json"

	"github.com/agentd-dev/agentd/core/model"
)

// modelItem is a model history item.
type modelItem = model.ResponseItem

// jsonRaw encodes v, keeping json.RawMessage as is; nil stays empty.
func jsonRaw(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	}
	return json.Marshal(v)
}
