package protocol

import (
	"strconv"
	"unicode/utf8"
)

// MaxEcho is how many bytes of a string a client supplied an error or a
// log line repeats: a method name, an id, a path, a model name. A client
// that sends a megabyte of it gets a short answer, not its megabyte back.
const MaxEcho = 256

// MaxErrorMessage caps the message of any error response (the engine
// enforces it when it encodes one, whatever built the message). The
// longest of ours, an unknown method's list of the known ones (all the
// reference's client requests, as the reference lists them), is about
// 4.4 KB, and 4.7 KB with a cut method name.
const MaxErrorMessage = 8 << 10

// CutMarker starts what Cut puts in place of the bytes it drops:
// "…[cut, 1048576 bytes in all]".
const CutMarker = "…[cut, "

// Cut returns s when it is at most MaxEcho bytes long, else its first
// MaxEcho bytes (whole UTF-8 characters) and a marker that gives its
// length. Every echo of a client's string goes through it.
func Cut(s string) string { return CutTo(s, MaxEcho) }

// CutTo is Cut with a limit of n bytes.
func CutTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := n
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + CutMarker + strconv.Itoa(len(s)) + " bytes in all]"
}
