package legacy

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
)

// ErrNotSQLite is returned (wrapped) when a file is not a SQLite database.
var ErrNotSQLite = errors.New("not a SQLite database")

// ErrBadDatabase is returned (wrapped) when a SQLite file is not an index
// database airlock can convert: a table or column is missing, the schema version
// is not the one opm v1.73 writes, or a value is unusable.
var ErrBadDatabase = errors.New("unusable index database")

// SchemaVersion is the schema version (table schema_migrations) of the index
// databases opm v1.73 writes; the last one opm ever defined.
const SchemaVersion = 13

// sqliteMagic starts every SQLite 3 database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// IsSQLite reports whether the file at p starts like a SQLite 3 database.
func IsSQLite(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	_, err = io.ReadFull(f, head)
	return err == nil && bytes.Equal(head, sqliteMagic)
}

// openDB opens the database at p read-only and immutable (nothing is written,
// no journal or lock file is created, so a database in a read-only folder
// works) after checking that it is a SQLite file.
func openDB(ctx context.Context, p string) (*sql.DB, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: not a regular file", p, ErrNotSQLite)
	}
	if !IsSQLite(p) {
		return nil, fmt.Errorf("%s: %w: the file does not start with the SQLite 3 header", p, ErrNotSQLite)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open(driverName, u.String())
	if err != nil {
		return nil, fmt.Errorf("%s: opening the database: %w", p, err)
	}
	// One connection: the reads are sequential and an immutable database needs
	// no more.
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w: opening it: %v", p, ErrBadDatabase, err)
	}
	return db, nil
}

// index is an open index database: its tables read, its bundles readable.
type index struct {
	db *sql.DB
	t  *tables
	br *bundleReader
}

// openIndex opens the index database at dbPath and reads its tables (all but
// the bundle contents), after checking its schema version.
func openIndex(ctx context.Context, dbPath string) (*index, error) {
	db, err := openDB(ctx, dbPath)
	if err != nil {
		return nil, err
	}
	ix := &index{db: db}
	if err := ix.read(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", dbPath, err)
	}
	return ix, nil
}

func (ix *index) read(ctx context.Context) error {
	v, err := readSchemaVersion(ctx, ix.db)
	if err != nil {
		return err
	}
	if v != SchemaVersion {
		return fmt.Errorf("%w: schema version %d, but airlock reads version %d (what opm v1.17 and later write); update the database with opm (any `opm registry add` or `opm index add` on it migrates it) and try again", ErrBadDatabase, v, SchemaVersion)
	}
	if ix.t, err = readTables(ctx, ix.db); err != nil {
		return err
	}
	ix.br, err = newBundleReader(ctx, ix.db)
	return err
}

func (ix *index) close() {
	if ix.br != nil {
		ix.br.close()
	}
	ix.db.Close()
}

// recoverEngine turns a panic of the SQLite engine into an error: the driver
// is pure Go, and a fault inside it on a crafted file must still be an error,
// not a crash. Deferred by every function that reads a database.
func recoverEngine(dbPath string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: %w: the SQLite engine failed reading it (%v)", dbPath, ErrBadDatabase, r)
	}
}

// tables is what convert reads from the database, all but the bundle contents
// (operatorbundle.bundle and .csv), which are read one bundle at a time.
type tables struct {
	packages []pkgRow
	channels []channelRow
	entries  []entryRow
	props    map[string][]kv // by bundle name, in row order
	deps     map[string][]kv
	related  map[string][]string // by bundle name, in row order
}

type pkgRow struct {
	name, defaultChannel sql.NullString
}

type channelRow struct {
	name, pkg, head sql.NullString
}

type entryRow struct {
	id              int64
	channel, pkg    sql.NullString
	bundle          sql.NullString
	replaces, depth sql.NullInt64
}

// kv is one row of the properties or dependencies table.
type kv struct {
	typ, value sql.NullString
}

// readSchemaVersion returns the version recorded in schema_migrations.
func readSchemaVersion(ctx context.Context, db *sql.DB) (int64, error) {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT version FROM schema_migrations LIMIT 1`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !v.Valid) {
		return 0, fmt.Errorf("%w: table schema_migrations holds no version", ErrBadDatabase)
	}
	if err != nil {
		return 0, fmt.Errorf("%w: reading the schema version (table schema_migrations): %v", ErrBadDatabase, err)
	}
	return v.Int64, nil
}

// readTables reads every table but the bundle contents.
func readTables(ctx context.Context, db *sql.DB) (*tables, error) {
	t := &tables{props: map[string][]kv{}, deps: map[string][]kv{}, related: map[string][]string{}}
	err := query(ctx, db, "package", `SELECT name, default_channel FROM package`, func(rows *sql.Rows) error {
		var r pkgRow
		if err := rows.Scan(&r.name, &r.defaultChannel); err != nil {
			return err
		}
		t.packages = append(t.packages, r)
		return nil
	})
	if err == nil {
		err = query(ctx, db, "channel", `SELECT name, package_name, head_operatorbundle_name FROM channel`, func(rows *sql.Rows) error {
			var r channelRow
			if err := rows.Scan(&r.name, &r.pkg, &r.head); err != nil {
				return err
			}
			t.channels = append(t.channels, r)
			return nil
		})
	}
	if err == nil {
		err = query(ctx, db, "channel_entry", `SELECT entry_id, channel_name, package_name, operatorbundle_name, replaces, depth FROM channel_entry ORDER BY entry_id`, func(rows *sql.Rows) error {
			var r entryRow
			var id sql.NullInt64
			if err := rows.Scan(&id, &r.channel, &r.pkg, &r.bundle, &r.replaces, &r.depth); err != nil {
				return err
			}
			if !id.Valid {
				return errors.New("a row has no entry_id")
			}
			r.id = id.Int64
			t.entries = append(t.entries, r)
			return nil
		})
	}
	if err == nil {
		err = query(ctx, db, "properties", `SELECT operatorbundle_name, type, value FROM properties ORDER BY rowid`, kvScanner(t.props))
	}
	if err == nil {
		err = query(ctx, db, "dependencies", `SELECT operatorbundle_name, type, value FROM dependencies ORDER BY rowid`, kvScanner(t.deps))
	}
	if err == nil {
		err = query(ctx, db, "related_image", `SELECT operatorbundle_name, image FROM related_image`, func(rows *sql.Rows) error {
			var name, img sql.NullString
			if err := rows.Scan(&name, &img); err != nil {
				return err
			}
			if name.Valid && img.Valid {
				t.related[name.String] = append(t.related[name.String], img.String)
			}
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

func kvScanner(into map[string][]kv) func(rows *sql.Rows) error {
	return func(rows *sql.Rows) error {
		var name sql.NullString
		var r kv
		if err := rows.Scan(&name, &r.typ, &r.value); err != nil {
			return err
		}
		if name.Valid {
			into[name.String] = append(into[name.String], r)
		}
		return nil
	}
}

// query runs q and calls each for every row, naming the table in errors.
func query(ctx context.Context, db *sql.DB, table, q string, each func(*sql.Rows) error) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("%w: reading table %s: %v", ErrBadDatabase, table, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		if err := each(rows); err != nil {
			return fmt.Errorf("%w: table %s, row %d: %v", ErrBadDatabase, table, n, err)
		}
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: reading table %s: %v", ErrBadDatabase, table, err)
	}
	return nil
}

// bundleContent is what operatorbundle holds for one bundle.
type bundleContent struct {
	found                          bool
	bundle, path, version, skipRng sql.NullString
}

// bundleReader reads operatorbundle rows one at a time.
type bundleReader struct {
	stmt  *sql.Stmt
	light *sql.Stmt
	csv   *sql.Stmt
}

func newBundleReader(ctx context.Context, db *sql.DB) (*bundleReader, error) {
	s, err := db.PrepareContext(ctx, `SELECT bundle, bundlepath, version, skiprange FROM operatorbundle WHERE name = ?`)
	if err != nil {
		return nil, fmt.Errorf("%w: reading table operatorbundle: %v", ErrBadDatabase, err)
	}
	l, err := db.PrepareContext(ctx, `SELECT bundlepath, version, skiprange FROM operatorbundle WHERE name = ?`)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%w: reading table operatorbundle: %v", ErrBadDatabase, err)
	}
	c, err := db.PrepareContext(ctx, `SELECT csv FROM operatorbundle WHERE name = ?`)
	if err != nil {
		s.Close()
		l.Close()
		return nil, fmt.Errorf("%w: reading table operatorbundle: %v", ErrBadDatabase, err)
	}
	return &bundleReader{stmt: s, light: l, csv: c}, nil
}

func (br *bundleReader) close() {
	br.stmt.Close()
	br.light.Close()
	br.csv.Close()
}

// read reads a bundle's row, its manifests (operatorbundle.bundle) included.
func (br *bundleReader) read(ctx context.Context, name string) (bundleContent, error) {
	return br.scan(ctx, br.stmt, name, true)
}

// readLight reads a bundle's row without its manifests.
func (br *bundleReader) readLight(ctx context.Context, name string) (bundleContent, error) {
	return br.scan(ctx, br.light, name, false)
}

func (br *bundleReader) scan(ctx context.Context, stmt *sql.Stmt, name string, heavy bool) (bundleContent, error) {
	var c bundleContent
	dest := []any{&c.path, &c.version, &c.skipRng}
	if heavy {
		dest = append([]any{&c.bundle}, dest...)
	}
	err := stmt.QueryRowContext(ctx, name).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("%w: table operatorbundle, bundle %q: %v", ErrBadDatabase, name, err)
	}
	c.found = true
	return c, nil
}

// readCSV returns operatorbundle.csv of a bundle and whether the row exists.
func (br *bundleReader) readCSV(ctx context.Context, name string) (string, bool, error) {
	var s sql.NullString
	err := br.csv.QueryRowContext(ctx, name).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("%w: table operatorbundle, bundle %q: %v", ErrBadDatabase, name, err)
	}
	return s.String, true, nil
}
