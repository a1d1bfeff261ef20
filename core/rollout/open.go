package rollout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
)

// Bounds on what a reader takes from one rollout file. A path can come
// from a client (thread/resume and thread/fork take one), so a read must
// not be turned against the daemon: no blocking open, no unbounded line,
// no unbounded file.
const (
	// DefaultMaxLineBytes caps one record: a longer line fails the read.
	DefaultMaxLineBytes = 64 << 20
	// DefaultMaxFileBytes caps one rollout file: a larger one fails the
	// read.
	DefaultMaxFileBytes = 1 << 30
	// MetaLineBytes bounds the first line, which must be the session's
	// metadata: a file that has none within it is not a rollout.
	MetaLineBytes = 1 << 20
)

// Limits bound the reads of rollout files. Zero fields take the defaults.
type Limits struct {
	// MaxLineBytes caps one line, its newline excluded
	// (DefaultMaxLineBytes).
	MaxLineBytes int64
	// MaxFileBytes caps a whole file (DefaultMaxFileBytes).
	MaxFileBytes int64
}

func (l Limits) maxLine() int64 {
	if l.MaxLineBytes > 0 {
		return l.MaxLineBytes
	}
	return DefaultMaxLineBytes
}

func (l Limits) maxFile() int64 {
	if l.MaxFileBytes > 0 {
		return l.MaxFileBytes
	}
	return DefaultMaxFileBytes
}

// Why a file cannot be read as a rollout; compare with errors.Is.
var (
	// ErrNotRegularFile: a directory, a named pipe, a device or a socket.
	ErrNotRegularFile = errors.New("not a regular file")
	// ErrNotRollout: the file does not start with a session_meta record
	// within MetaLineBytes.
	ErrNotRollout = errors.New("not a rollout file")
	// ErrLineTooLong: a line is longer than Limits.MaxLineBytes.
	ErrLineTooLong = errors.New("line too long")
	// ErrFileTooLarge: the file is larger than Limits.MaxFileBytes.
	ErrFileTooLarge = errors.New("file too large")
)

// FileError says which file could not be read and why. The path is kept
// apart from the reason so that a server echoing a path a client gave can
// cut it to a sane length.
type FileError struct {
	Path string
	// Err wraps one of the Err… values above or an OS error, and reads
	// as the reason: "path is a named pipe (FIFO), not a regular file".
	Err error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e *FileError) Unwrap() error { return e.Err }

// fileErr wraps err for path; an *fs.PathError is unwrapped to its cause,
// so that the path is said once.
func fileErr(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &FileError{Path: path, Err: err}
}

// openRollout opens path for reading (openRegular), refusing a file larger
// than lim allows.
func openRollout(path string, lim Limits) (*os.File, fs.FileInfo, error) {
	f, st, err := openRegular(path)
	if err != nil {
		return nil, nil, err
	}
	if st.Size() > lim.maxFile() {
		f.Close()
		return nil, nil, fileErr(path, fmt.Errorf("%w: it is %s, more than the limit of %s", ErrFileTooLarge, byteSize(st.Size()), byteSize(lim.maxFile())))
	}
	return f, st, nil
}

// openRegular opens path for reading, refusing anything but a regular
// file. It never blocks on the open: the type is checked before it, and
// the file is opened non-blocking, so a named pipe with no writer (or one
// swapped in after the check) cannot hold the caller; the opened file's
// own type is checked again, which closes that race. The descriptor stays
// non-blocking: that changes nothing for a regular file, and makes a
// special file that claims to be regular (such as /proc/kmsg) fail
// rather than wait.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fileErr(path, err)
	}
	if err := checkRegular(st); err != nil {
		return nil, nil, fileErr(path, err)
	}
	return openListed(path)
}

// openListed is openRegular for a path a directory listing just gave as
// a regular file (the index's scans of the home): the type is not checked
// before the open, only after it, which saves a stat per file.
func openListed(path string) (*os.File, fs.FileInfo, error) {
	noteOpen(path)
	if f := openFault.Load(); f != nil {
		if err := (*f)(path); err != nil {
			return nil, nil, fileErr(path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, nil, fileErr(path, err)
	}
	st, err := f.Stat()
	if err == nil {
		err = checkRegular(st)
	}
	if err != nil {
		f.Close()
		return nil, nil, fileErr(path, err)
	}
	return f, st, nil
}

// onOpen, when set, is told of each rollout file the store opens to read
// it (a test hook: the files a listing reads).
var onOpen atomic.Pointer[func(path string)]

// openFault, when set, makes openListed fail with its error for a path
// (a test hook: errors root cannot otherwise cause, such as running out of
// descriptors).
var openFault atomic.Pointer[func(path string) error]

func noteOpen(path string) {
	if f := onOpen.Load(); f != nil {
		(*f)(path)
	}
}

// checkRegular refuses what is not a regular file, naming what it is.
func checkRegular(st fs.FileInfo) error {
	m := st.Mode()
	if m.IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	case m&fs.ModeSymlink != 0:
		what = "a symbolic link"
	case m&fs.ModeIrregular != 0:
		what = "an irregular file"
	}
	return fmt.Errorf("path is %s, %w", what, ErrNotRegularFile)
}

// byteSize words a size for an error: in MiB or GiB when it is a whole
// number of them, else in bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readErr attributes a scan's error to its file; the error of an ended
// ctx passes as it is.
func readErr(ctx context.Context, path string, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return fileErr(path, err)
}

// errMetaRead ends ReadMeta's scan after the first line.
var errMetaRead = errors.New("session_meta read")

// ReadMeta reads the session_meta of the rollout at path, and nothing
// more of the file: it is how a path a client gives names its thread. It
// fails as ReadThread does for a file that is not a rollout.
func ReadMeta(ctx context.Context, path string, lim Limits) (SessionMeta, error) {
	f, st, err := openRollout(path, lim)
	if err != nil {
		return SessionMeta{}, err
	}
	defer f.Close()
	var meta SessionMeta
	_, err = scanLines(ctx, f, min(st.Size(), MetaLineBytes), readLimits(lim), func(b []byte, _ int, _ bool) error {
		l, err := parseLine(b, nil)
		if err == nil {
			meta, err = decodeMeta(l.Payload)
		}
		if err != nil {
			return fmt.Errorf("%w: its session_meta is unreadable: %v", ErrNotRollout, err)
		}
		return errMetaRead
	})
	if err != errMetaRead { //nolint:errorlint // our own sentinel, returned as is
		return SessionMeta{}, readErr(ctx, path, err)
	}
	if meta.ID == "" {
		return SessionMeta{}, fileErr(path, fmt.Errorf("%w: its session_meta has no id", ErrNotRollout))
	}
	return meta, nil
}
