package core

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentd-dev/agentd/core/model"
)

// Images reach the model as input_image parts: a URL the provider fetches
// (http, https) or a data URL with the bytes. A local image (a localImage
// input, or a file the model asks to see with view_image) is read into a
// data URL; it must be a regular file of at most MaxImageBytes holding a
// PNG, JPEG, GIF or WebP image, the formats the Responses API takes.

const (
	// MaxImageBytes bounds one image, read from a file or decoded from a
	// data URL (the Responses API's own limit per image is 20 MB).
	MaxImageBytes = 20 << 20
	// maxInputImageBytes bounds the images of one user message together,
	// so that a request stays well under the API's payload limit.
	maxInputImageBytes = 50 << 20
)

// imageTypes are the image formats the model accepts, by the MIME type
// their bytes sniff as.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// ImageInputError says why an image of a user input cannot be sent. Its
// message names the input's place and kind, and the path or URL.
type ImageInputError struct {
	Index  int
	Kind   UserInputKind
	Reason string
}

func (e *ImageInputError) Error() string {
	return fmt.Sprintf("input[%d] (%s): %s", e.Index, e.Kind, e.Reason)
}

// PrepareImages checks the images of a user input and reads its local
// images (a relative path is relative to cwd), before a turn takes it: a
// problem is an *ImageInputError for the client, not a failed turn. The
// inputs returned carry the bytes for the model, and local paths made
// absolute; the items shown keep the path or URL, not the bytes.
func PrepareImages(in []UserInput, cwd string) ([]UserInput, error) {
	out := make([]UserInput, len(in))
	total := 0
	for i, u := range in {
		out[i] = u
		fail := func(format string, args ...any) error {
			return &ImageInputError{Index: i, Kind: u.Kind, Reason: fmt.Sprintf(format, args...)}
		}
		switch u.Kind {
		case InputImage:
			n, err := checkImageURL(u.ImageURL)
			if err != nil {
				return nil, fail("%v", err)
			}
			total += n
		case InputLocalImage:
			if u.Path == "" {
				return nil, fail("path is empty")
			}
			p := u.Path
			if !filepath.IsAbs(p) {
				p = filepath.Join(cwd, p)
			}
			data, err := readImage(p)
			if err != nil {
				return nil, fail("%v", err)
			}
			out[i].ImageURL, out[i].Path = data, p
			total += len(data) * 3 / 4
		default:
			continue
		}
		if total > maxInputImageBytes {
			return nil, fail("the images of one message may have %d MiB in all; this one brings them past it", maxInputImageBytes>>20)
		}
	}
	return out, nil
}

// checkImageURL accepts an http(s) URL (the provider fetches it) or a
// data URL of an image with base64 data within MaxImageBytes, and returns
// the bytes it carries (0 for a URL).
func checkImageURL(raw string) (int, error) {
	shown := cutForError(raw)
	if rest, ok := strings.CutPrefix(raw, "data:"); ok {
		meta, payload, ok := strings.Cut(rest, ",")
		typ, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 || !strings.HasPrefix(typ, "image/") {
			return 0, fmt.Errorf("url %s is not a data URL of an image with base64 data (data:image/png;base64,…)", shown)
		}
		n := base64.StdEncoding.DecodedLen(len(payload))
		if n > MaxImageBytes {
			return 0, fmt.Errorf("the image of url %s has %d bytes, more than the %d an image may have", shown, n, MaxImageBytes)
		}
		if _, err := base64.StdEncoding.DecodeString(payload); err != nil {
			return 0, fmt.Errorf("url %s is not valid base64: %v", shown, err)
		}
		return n, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return 0, fmt.Errorf("url %s is neither an http(s) URL nor a data URL; send a local file as a localImage", shown)
	}
	return 0, nil
}

// readImage reads an image file as a data URL. The file is opened
// non-blocking, so that a named pipe with no writer is refused (not a
// regular file) rather than waited on forever.
func readImage(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > MaxImageBytes {
		return "", fmt.Errorf("%s has %d bytes, more than the %d an image may have", path, st.Size(), MaxImageBytes)
	}
	// Read at most one byte past the bound: the file may grow.
	b, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	if len(b) > MaxImageBytes {
		return "", fmt.Errorf("%s has more than the %d bytes an image may have", path, MaxImageBytes)
	}
	typ := http.DetectContentType(b)
	if !imageTypes[typ] {
		return "", fmt.Errorf("%s is not a PNG, JPEG, GIF or WebP image (its content is %s)", path, typ)
	}
	return "data:" + typ + ";base64," + base64.StdEncoding.EncodeToString(b), nil
}

// unwrapPath drops the path an *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// cutForError quotes a client's URL for an error, cut to a sane length
// (a data URL may be megabytes).
func cutForError(s string) string {
	const max = 80
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…(%d bytes)", s[:max], len(s))
}

// imageParts are the parts of a user message that show the model one
// image: the image between tags that name it (and its file), as the
// reference frames them.
func imageParts(n int, path, imageURL, detail string) []model.ContentPart {
	open := fmt.Sprintf("<image name=[Image #%d]>", n)
	if path != "" {
		open = fmt.Sprintf("<image name=[Image #%d] path=%q>", n, path)
	}
	return []model.ContentPart{
		{Type: "input_text", Text: open},
		{Type: "input_image", ImageURL: imageURL, Detail: detail},
		{Type: "input_text", Text: "</image>"},
	}
}
