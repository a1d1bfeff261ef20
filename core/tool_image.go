package core

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/agentd-dev/agentd/core/model"
)

// viewImageTool lets the model look at an image file on the machine: the
// image comes back as the call's output, and the user sees an imageView
// item.
const viewImageTool = "view_image"

var viewImageSpec = json.RawMessage(`{"type":"function","name":"view_image","description":"Look at an image file on this machine (a screenshot, a diagram, a photo): the image is attached to the result. Use it when what matters is what the image shows. PNG, JPEG, GIF and WebP files of up to 20 MiB.","strict":false,"parameters":{"type":"object","properties":{"path":{"type":"string","description":"The image file's path, absolute or relative to the working directory."}},"required":["path"],"additionalProperties":false}}`)

// runViewImage attaches the image at the call's path. An image that
// cannot be read is a text answer saying why, and no item.
func (s *Session) runViewImage(ctx context.Context, t *turn, c *toolCall) model.ResponseItem {
	var args struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(c.args), &args); err != nil {
		return c.output("failed to parse view_image arguments: " + err.Error())
	}
	if args.Path == "" {
		return c.output("view_image needs a path")
	}
	path := args.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(t.tc.Cwd, path)
	}
	data, err := readImage(path)
	if err != nil {
		return c.output(fmt.Sprintf("the image could not be attached: %v", err))
	}
	item := ImageViewItem{ID: c.callID, Path: path}
	s.emit(t.subID, t.id, ItemStarted{Item: item})
	s.emit(t.subID, t.id, ItemCompleted{Item: item})
	return model.NewFunctionCallOutput("", c.callID, []model.ContentPart{{Type: "input_image", ImageURL: data}})
}
