package threads

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentd-dev/agentd/core/rollout"
	"github.com/agentd-dev/agentd/protocol"
)

// readErr words the error of a read of a rollout file, or returns nil for
// another error: a file that is not one, or is beyond the limits, is
// "<prefix> `<path>`: <why>" with code; a read stopped by shutdown is the
// engine's own shutdown answer. Paths are cut (protocol.Cut): a client may
// have given them.
func readErr(err error, code int64, prefix string) *protocol.Error {
	if errors.Is(err, rollout.ErrReadsStopped) {
		return protocol.Errorf(protocol.CodeInternalError, "the server is shutting down")
	}
	var fe *rollout.FileError
	if !errors.As(err, &fe) {
		return nil
	}
	msg := fmt.Sprintf("%s `%s`: %v", prefix, protocol.Cut(fe.Path), fe.Err)
	switch {
	case errors.Is(err, rollout.ErrLineTooLong):
		msg += " (set by [server] rollout_max_line_bytes)"
	case errors.Is(err, rollout.ErrFileTooLarge):
		msg += " (set by [server] rollout_max_file_bytes)"
	}
	return protocol.Errorf(code, "%s", msg)
}

// pathErr words the error of a read of a rollout file a client named
// (thread/resume's and thread/fork's path): -32600, with the reference's
// "failed to resolve rollout path" and the reason, which says what the
// path is when it is not a regular file, "not a rollout file" when it does
// not start with the session's metadata, or which limit it crossed.
func pathErr(err error) error {
	if perr := readErr(err, protocol.CodeInvalidRequest, "failed to resolve rollout path"); perr != nil {
		return perr
	}
	return err
}

// metaErr words a new rollout's refusal of a session_meta too long for
// any reader (rollout.ErrMetaTooLarge): -32600 with its size and the
// limit, and what makes it long. Another error is returned as it is.
func metaErr(method string, err error) error {
	if !errors.Is(err, rollout.ErrMetaTooLarge) {
		return err
	}
	why := strings.TrimPrefix(err.Error(), rollout.ErrMetaTooLarge.Error()+": ")
	return protocol.InvalidRequest("%s: the thread's session metadata %s (baseInstructions, developerInstructions and threadSource are in it)", method, why)
}
