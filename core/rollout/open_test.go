//go:build unix

package rollout

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// wantFileErr checks that err is a *FileError for path wrapping want, and
// that its text says sub.
func wantFileErr(t *testing.T, err error, path string, want error, sub string) {
	t.Helper()
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != path || !errors.Is(err, want) {
		t.Fatalf("error %v, want a *FileError for %s wrapping %v", err, path, want)
	}
	if !strings.Contains(err.Error(), sub) {
		t.Fatalf("error %q does not say %q", err, sub)
	}
}

// Anything but a regular file is refused before a byte is read, naming
// what it is; a named pipe without a writer does not block the open.
func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for path, what := range map[string]string{
		fifo:        "path is a named pipe (FIFO), not a regular file",
		dir:         "path is a directory, not a regular file",
		sock:        "path is a socket, not a regular file",
		"/dev/zero": "path is a character device, not a regular file",
	} {
		_, err := ReadThread(testCtx(t), path, ReadOptions{})
		wantFileErr(t, err, path, ErrNotRegularFile, what)
		_, err = ReadMeta(testCtx(t), path, Limits{})
		wantFileErr(t, err, path, ErrNotRegularFile, what)
	}
}

// endless is a reader that never ends: lines of line, then (or only)
// fill forever. It counts what was read.
type endless struct {
	head []byte
	fill byte
	read int64
}

func (e *endless) Read(p []byte) (int, error) {
	n := copy(p, e.head)
	e.head = e.head[n:]
	for i := n; i < len(p); i++ {
		p[i] = e.fill
	}
	e.read += int64(len(p))
	return len(p), nil
}

// A stream with no newline (/dev/zero behind a regular file's name, a
// huge file of one line) is refused once the first MiB holds no
// metadata: the scan reads little more than that, and holds no more.
func TestScanGivesUpWithoutMetadataInTheFirstMiB(t *testing.T) {
	r := &endless{fill: 0}
	_, err := scanLines(testCtx(t), r, 0, readLimits(Limits{}), func([]byte, int, bool) error {
		t.Fatal("a line was passed")
		return nil
	})
	if !errors.Is(err, ErrNotRollout) || !strings.Contains(err.Error(), "no session metadata within its first 1 MiB") {
		t.Fatalf("scan = %v, want ErrNotRollout", err)
	}
	if r.read > MetaLineBytes+2*scanBufSize {
		t.Fatalf("read %d bytes to find no metadata", r.read)
	}
}

// A line longer than the cap fails the read after about the cap's bytes,
// naming the line; the skipping scan (the index's) drops it and goes on.
func TestScanCapsLines(t *testing.T) {
	meta := must(metaLine(testMeta("t-long", baseTime)))
	r := &endless{head: meta, fill: 'x'}
	lim := readLimits(Limits{MaxLineBytes: 4096})
	lines := 0
	_, err := scanLines(testCtx(t), r, 0, lim, func([]byte, int, bool) error { lines++; return nil })
	if !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "line 2 is longer than the limit of 4096 bytes") {
		t.Fatalf("scan = %v, want ErrLineTooLong for line 2", err)
	}
	if lines != 1 || r.read > int64(len(meta))+4096+2*scanBufSize {
		t.Fatalf("%d lines passed, %d bytes read", lines, r.read)
	}

	// Skipped: a long line between two records.
	in := append(append(append(bytes.Clone(meta), bytes.Repeat([]byte("y"), 600<<10)...), '\n'), meta...)
	var got []int
	lim.skipLong = true
	_, err = scanLines(testCtx(t), bytes.NewReader(in), int64(len(in)), lim, func(_ []byte, n int, _ bool) error {
		got = append(got, n)
		return nil
	})
	if err != nil || len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("skipping scan passed lines %v, err %v; want [1 3]", got, err)
	}

	// ReadThread on a file: the same error, attributed to the file.
	p := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(p, in, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ReadThread(testCtx(t), p, ReadOptions{Limits: Limits{MaxLineBytes: 4096}})
	wantFileErr(t, err, p, ErrLineTooLong, "line 2 is longer than the limit of 4096 bytes")
	// ReadMeta reads the first line only: the long one is never seen.
	if m, err := ReadMeta(testCtx(t), p, Limits{MaxLineBytes: 4096}); err != nil || m.ID != "t-long" {
		t.Fatalf("ReadMeta = %+v, %v", m, err)
	}
}

// A file larger than the cap is refused before it is read; a file that
// grows past it while being read (or claims a size it does not have)
// fails once the cap is crossed.
func TestReadCapsFiles(t *testing.T) {
	s, _ := openStore(t, Options{})
	p := recordThread(t, s, "t-big", turnScript{id: "t1", prompt: "one", end: "completed"})
	st := must(os.Stat(p))
	_, err := ReadThread(testCtx(t), p, ReadOptions{Limits: Limits{MaxFileBytes: st.Size() - 1}})
	wantFileErr(t, err, p, ErrFileTooLarge, "more than the limit of")
	if _, err := ReadThread(testCtx(t), p, ReadOptions{Limits: Limits{MaxFileBytes: st.Size()}}); err != nil {
		t.Fatalf("a file at the cap: %v", err)
	}

	meta := must(metaLine(testMeta("t-grow", baseTime)))
	r := &endless{head: meta, fill: '\n'}
	_, err = scanLines(testCtx(t), r, 0, readLimits(Limits{MaxFileBytes: 1 << 20}), func([]byte, int, bool) error { return nil })
	if !errors.Is(err, ErrFileTooLarge) || r.read > 1<<20+2*scanBufSize {
		t.Fatalf("scan = %v after %d bytes, want ErrFileTooLarge", err, r.read)
	}
}

// The first line decides: a JSON file that is not a rollout is refused
// with "not a rollout file", by every reader.
func TestReadRefusesOtherFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "other.jsonl")
	if err := os.WriteFile(p, []byte(`{"hello":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadThread(testCtx(t), p, ReadOptions{})
	wantFileErr(t, err, p, ErrNotRollout, "not a rollout file: the first line is not the session's metadata")
	_, err = ReadMeta(testCtx(t), p, Limits{})
	wantFileErr(t, err, p, ErrNotRollout, "not a rollout file")
	if _, _, err := scanSummary(p, nil, 0, Limits{}); !errors.Is(err, ErrNotRollout) {
		t.Fatalf("index scan = %v, want ErrNotRollout", err)
	}
}

// A read stops when its context ends, between lines.
func TestScanStopsWithItsContext(t *testing.T) {
	meta := must(metaLine(testMeta("t-ctx", baseTime)))
	r := &endless{head: meta, fill: '\n'}
	ctx, cancel := context.WithCancel(testCtx(t))
	lines := 0
	_, err := scanLines(ctx, r, 0, scanLimits{maxLine: DefaultMaxLineBytes, firstMeta: true}, func([]byte, int, bool) error {
		lines++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || lines != 1 {
		t.Fatalf("scan = %v after %d lines, want context.Canceled after 1", err, lines)
	}
	// A file read with an ended context: the context's error, not a
	// FileError.
	s, _ := openStore(t, Options{})
	p := recordThread(t, s, "t-ctx2", turnScript{id: "t1", prompt: "one", end: "completed"})
	_, err = ReadThread(ctx, p, ReadOptions{})
	var fe *FileError
	if !errors.Is(err, context.Canceled) || errors.As(err, &fe) {
		t.Fatalf("ReadThread with an ended context = %v", err)
	}
	if _, err := ReadThread(testCtx(t), filepath.Join(t.TempDir(), "none"), ReadOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

// StopReads ends the store's reads, in progress or later, with
// ErrReadsStopped: a daemon that shuts down does not wait on one.
func TestStopReads(t *testing.T) {
	s, _ := openStore(t, Options{})
	p := recordThread(t, s, "t-stop", turnScript{id: "t1", prompt: "one", end: "completed"})
	if _, err := s.Read(testCtx(t), "t-stop", ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	s.StopReads()
	if _, err := s.Read(testCtx(t), "t-stop", ReadOptions{}); !errors.Is(err, ErrReadsStopped) {
		t.Fatalf("Read after StopReads = %v", err)
	}
	if _, err := s.ReadMeta(testCtx(t), p); !errors.Is(err, ErrReadsStopped) {
		t.Fatalf("ReadMeta after StopReads = %v", err)
	}
	if _, err := s.Fork(testCtx(t), ForkOptions{SourceID: "t-stop"}); !errors.Is(err, ErrReadsStopped) {
		t.Fatalf("Fork after StopReads = %v", err)
	}
}

// A line longer than the read buffer and within its cap is passed whole,
// whether the reader can be read again at an offset (a file: the line is
// measured, then read once) or not (it is gathered); a long last line
// without its newline is passed torn. The index's scan, started past the
// first line, finds the same.
func TestScanPassesLongLinesWhole(t *testing.T) {
	meta := must(metaLine(testMeta("t-whole", baseTime)))
	long := bytes.Repeat([]byte("z"), 3*scanBufSize+17)
	in := slices.Concat(meta, long, []byte("\n"), meta, long)
	type line struct {
		b    string
		n    int
		torn bool
	}
	collect := func(r io.Reader, lim scanLimits) ([]line, int64) {
		var got []line
		off, err := scanLines(testCtx(t), r, int64(len(in)), lim, func(b []byte, n int, torn bool) error {
			got = append(got, line{string(b), n, torn})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, off
	}
	want := []line{{string(bytes.TrimRight(meta, "\n")), 1, false}, {string(long), 2, false}, {string(bytes.TrimRight(meta, "\n")), 3, false}, {string(long), 4, true}}
	lim := readLimits(Limits{MaxLineBytes: 4 * scanBufSize})
	for name, r := range map[string]io.Reader{
		"at an offset": bytes.NewReader(in),
		"gathered":     io.MultiReader(bytes.NewReader(in)),
	} {
		got, off := collect(r, lim)
		if !slices.Equal(got, want) || off != int64(len(in)-len(long)) {
			t.Fatalf("%s: %d lines, offset %d", name, len(got), off)
		}
	}
	// From an offset, as the index continues a grown file.
	r := bytes.NewReader(in)
	start := int64(len(meta) + len(long) + 1)
	r.Seek(start, io.SeekStart)
	lim.firstMeta = false
	got, off := collect(r, lim)
	if len(got) != 2 || got[1].b != string(long) || !got[1].torn || off != int64(len(meta)) {
		t.Fatalf("from an offset: %d lines, offset %d", len(got), off)
	}
}
