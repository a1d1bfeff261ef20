package transport

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, lr *lineReader) (lines []string, tooLarge int) {
	t.Helper()
	for i := 0; i < 10000; i++ {
		b, err := lr.next()
		switch {
		case errors.Is(err, io.EOF):
			return lines, tooLarge
		case errors.Is(err, ErrMessageTooLarge):
			tooLarge++
		case err != nil:
			t.Fatalf("error %v", err)
		default:
			lines = append(lines, string(b))
		}
	}
	t.Fatal("reader does not end")
	return nil, 0
}

func TestLineReaderFraming(t *testing.T) {
	in := "{\"a\":1}\r\n\n   \r\n\t\n{\"b\":2}\n" + strings.Repeat("x", 40) + "\n{\"c\":3}"
	for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in)), iotest.HalfReader(strings.NewReader(in))} {
		lr := newLineReader(r, 20)
		lines, big := readAll(t, lr)
		if strings.Join(lines, "|") != `{"a":1}|{"b":2}|{"c":3}` || big != 1 {
			t.Fatalf("lines %q, over-long %d", lines, big)
		}
	}
}

func TestLineReaderCapIsOnContent(t *testing.T) {
	exact := strings.Repeat("y", 16)
	lr := newLineReader(strings.NewReader(exact+"\r\n"+exact+"z\n"+exact), 16)
	lines, big := readAll(t, lr)
	if len(lines) != 2 || lines[0] != exact || lines[1] != exact || big != 1 {
		t.Fatalf("lines %q big %d", lines, big)
	}
}

func TestLineReaderOverLongFinalLine(t *testing.T) {
	lr := newLineReader(strings.NewReader("ok\n"+strings.Repeat("z", 100)), 10)
	lines, big := readAll(t, lr)
	if len(lines) != 1 || big != 1 {
		t.Fatalf("lines %q big %d", lines, big)
	}
}

func TestLineReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	lr := newLineReader(io.MultiReader(strings.NewReader("a\n"), iotest.ErrReader(boom)), 10)
	if b, err := lr.next(); err != nil || string(b) != "a" {
		t.Fatalf("%q %v", b, err)
	}
	if _, err := lr.next(); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
}

// FuzzLineReader checks the line reader against a simple model: split on
// "\n", drop one trailing "\r", skip blank lines, and report lines over the
// cap, for any input and any cap.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\r\n\nb"), uint8(4))
	f.Add([]byte("\r\r\n \n"+strings.Repeat("q", 70)), uint8(8))
	f.Add([]byte("{\"x\":1}\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, capb uint8) {
		max := int(capb) + 1
		var wantLines []string
		wantBig := 0
		parts := bytes.Split(data, []byte("\n"))
		for i, p := range parts {
			if i == len(parts)-1 && len(p) == 0 {
				break
			}
			if i < len(parts)-1 || len(p) > 0 {
				p = bytes.TrimSuffix(p, []byte("\r"))
			}
			if len(p) > max {
				wantBig++
				continue
			}
			if isBlank(p) {
				continue
			}
			wantLines = append(wantLines, string(p))
		}
		lr := newLineReader(iotest.HalfReader(bytes.NewReader(data)), max)
		lines, big := readAll(t, lr)
		if strings.Join(lines, "\x00") != strings.Join(wantLines, "\x00") || big != wantBig {
			t.Fatalf("cap %d input %q: got %q (%d over), want %q (%d over)", max, data, lines, big, wantLines, wantBig)
		}
	})
}
