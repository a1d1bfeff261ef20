package main

import (
	"github.com/agentd-dev/agentd/schema"
	"github.com/spf13/cobra"
)

func newSchemaCmd() *cobra.Command {
	var out string
	var experimental bool
	cmd := &cobra.Command{
		Use:   "schema --out DIR [--experimental]",
		Short: "Write the protocol's JSON Schema to a directory",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outDir(out); err != nil {
				return err
			}
			return schema.Write(out, experimental)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write the schema files to")
	cmd.Flags().BoolVar(&experimental, "experimental", false, "include experimental methods, fields and variants")
	return cmd
}
