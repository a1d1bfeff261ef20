package main

import (
	"os"

	"github.com/agentd-dev/agentd/schema"
)

func init() {
	writeSchema = func(dir string, experimental bool) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return schema.Write(dir, experimental)
	}
}
