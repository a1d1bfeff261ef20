package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/agentd-dev/agentd/schema"
)

// bundleNames are the file names the reference's generate-json-schema
// writes its bundles under; agentd writes its one (v2) bundle under both.
var bundleNames = []string{"codex_app_server_protocol.schemas.json", "codex_app_server_protocol.v2.schemas.json"}

func newGenerateJSONSchemaCmd() *cobra.Command {
	var out string
	var experimental bool
	cmd := &cobra.Command{
		Use:   "generate-json-schema --out DIR [--experimental]",
		Short: "Write the protocol's JSON Schema bundle to DIR",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outDir(out); err != nil {
				return err
			}
			b, err := schema.Bundle(experimental)
			if err != nil {
				return err
			}
			for _, name := range bundleNames {
				if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "output directory")
	cmd.Flags().BoolVar(&experimental, "experimental", false, "include experimental methods and fields")
	return cmd
}

func newGenerateTSCmd() *cobra.Command {
	var out, prettier string
	var experimental bool
	cmd := &cobra.Command{
		Use:   "generate-ts --out DIR [--experimental] [--prettier BIN]",
		Short: "Write TypeScript declarations of the protocol to DIR",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outDir(out); err != nil {
				return err
			}
			files, err := schema.TypeScript(experimental)
			if err != nil {
				return err
			}
			paths := make([]string, 0, len(files))
			for name, b := range files {
				p := filepath.Join(out, name)
				if err := os.WriteFile(p, b, 0o644); err != nil {
					return err
				}
				paths = append(paths, p)
			}
			if prettier == "" {
				return nil
			}
			sort.Strings(paths)
			fmtCmd := exec.Command(prettier, append([]string{"--write"}, paths...)...)
			fmtCmd.Stdout, fmtCmd.Stderr = os.Stderr, os.Stderr
			return fmtCmd.Run()
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "output directory")
	cmd.Flags().BoolVar(&experimental, "experimental", false, "include experimental methods and fields")
	cmd.Flags().StringVarP(&prettier, "prettier", "p", "", "Prettier executable to format the files with")
	return cmd
}

// outDir checks --out and creates it.
func outDir(dir string) error {
	if dir == "" {
		return usageError{errors.New("--out DIR is required")}
	}
	return os.MkdirAll(dir, 0o755)
}
