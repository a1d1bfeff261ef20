// Command gen writes agentd's schema bundles (stable.schemas.json and
// experimental.schemas.json) into the schema package directory.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/agentd-dev/agentd/schema"
)

func main() {
	dir := "schema"
	if os.Getenv("GOPACKAGE") == "schema" { // run by go generate in the package directory
		dir = "."
	}
	flag.StringVar(&dir, "dir", dir, "directory to write the bundles into")
	flag.Parse()
	for _, exp := range []bool{false, true} {
		if err := schema.Write(dir, exp); err != nil {
			fmt.Fprintln(os.Stderr, "schema:", err)
			os.Exit(1)
		}
	}
}
