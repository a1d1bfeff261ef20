// Package configedit edits config.toml for config/value/write and
// config/batchWrite, and computes the versions config/read reports.
//
// Edits are applied to the file's text in place where that can be done
// safely, so comments, blank lines and the order of keys survive: a
// value is replaced where it stands, a new key goes at the end of the
// table it belongs to, a removed key loses its line. When an edit cannot
// be made that way (replacing a whole [table], anything inside an array
// of tables) or the edited text would not parse back to exactly the
// intended document, the file is written anew from the document instead,
// which loses its comments. Apply says which of the two happened.
//
// A version is "sha256:" and the hex SHA-256 of the document as compact
// JSON with sorted keys, the reference server's scheme: a file's version
// changes when its content does, not when only comments or layout do.
package configedit
