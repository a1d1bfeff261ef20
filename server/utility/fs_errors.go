package utility

import (
	"errors"
	"fmt"
	osexec "os/exec"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/protocol"
)

// osErrorText renders an error from the operating system as the reference
// does ("No such file or directory (os error 2)"): the C library's text
// with its errno. Errors without an errno keep their own text. A program
// that is not on PATH is ENOENT, as a spawn reports it.
func osErrorText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errnoText(errno)
	}
	if errors.Is(err, osexec.ErrNotFound) {
		return errnoText(syscall.ENOENT)
	}
	return err.Error()
}

// errnoText is "<strerror> (os error <n>)". Go's errno texts are the C
// library's with a lower-case first letter.
func errnoText(errno syscall.Errno) string {
	s := errno.Error()
	if r, size := utf8.DecodeRuneInString(s); r != utf8.RuneError {
		s = string(unicode.ToUpper(r)) + s[size:]
	}
	return fmt.Sprintf("%s (os error %d)", s, int(errno))
}

// fsError converts an error of a file operation to the wire: -32603 with
// the OS text, as the reference answers.
func fsError(err error) error {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr
	}
	return protocol.Errorf(protocol.CodeInternalError, "%s", osErrorText(err))
}
