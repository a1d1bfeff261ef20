package main

import (
	"errors"
	"os"

	"github.com/agentd-dev/agentd/schema"
	"github.com/spf13/cobra"
)

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
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			return schema.Write(out, experimental)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write the schema files to")
	cmd.Flags().BoolVar(&experimental, "experimental", false, "include experimental methods, fields and variants")
	return cmd
}
