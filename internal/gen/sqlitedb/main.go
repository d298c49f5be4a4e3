// Command sqlitedb writes a file-based catalog folder as a SQLite index
// database with internal/sqliteindex: seconds where opm's own loader
// (conformance's TestBuildSQLiteDB) takes half an hour for the real-scale
// catalog; a quick database for profiling the SQLite conversion (the published
// figures use opm's, docs/benchmarks.md):
//
//	go run ./internal/gen/sqlitedb -from CATALOG_DIR -to index.db
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/internal/sqliteindex"
)

func main() {
	from := flag.String("from", "", "file-based catalog folder")
	to := flag.String("to", "", "database file to write")
	flag.Parse()
	if *from == "" || *to == "" {
		fmt.Fprintln(os.Stderr, "sqlitedb: -from DIR and -to FILE are required")
		os.Exit(2)
	}
	ctx := context.Background()
	c, err := fbc.LoadDir(ctx, *from, fbc.LoadOptions{})
	if err == nil {
		err = sqliteindex.Write(ctx, c, *to)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sqlitedb:", err)
		os.Exit(1)
	}
}
