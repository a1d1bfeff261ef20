package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// writeSchema writes the JSON Schema bundles of the protocol to dir. It is
// set in schema_write.go.
var writeSchema func(dir string, experimental bool) error

func newSchemaCmd() *cobra.Command {
	var out string
	var experimental bool
	cmd := &cobra.Command{
		Use:   "schema --out DIR [--experimental]",
		Short: "Write the protocol's JSON Schema to a directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("--out DIR is required")
			}
			return writeSchema(out, experimental)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write the schema files to")
	cmd.Flags().BoolVar(&experimental, "experimental", false, "include experimental methods, fields and variants")
	return cmd
}
