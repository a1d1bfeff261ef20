package main

import "errors"

// TODO(schema): replace with schema.Write from
// github.com/agentd-dev/agentd/schema once that package exports
// Write(dir string, experimental bool) error.
func init() {
	writeSchema = func(dir string, experimental bool) error {
		return errors.New("schema generation is not built into this binary yet")
	}
}
