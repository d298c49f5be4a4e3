package legacy

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/internal/sqliteindex"
)

// demoCatalog is the demo's file-based catalog (three packages, skips, a
// skipRange, dependencies).
const demoCatalog = "../../testdata/demo/catalog"

func loadDemo(t testing.TB) *fbc.Catalog {
	t.Helper()
	c, err := fbc.LoadDir(context.Background(), demoCatalog, fbc.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// demoDB writes the demo catalog as a SQLite index database and returns its path.
func demoDB(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "index.db")
	if err := sqliteindex.Write(context.Background(), loadDemo(t), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConvertRoundTrip: a catalog written as a database converts back to the
// same packages, channels and bundles (images, related images, package and
// dependency properties), within what the format keeps: SQLite stores one
// skipRange per bundle (not per channel entry) and only the replaces chain from
// the channel head, so the replaces of a bundle another one skips is lost, as
// it was with opm.
func TestConvertRoundTrip(t *testing.T) {
	ctx := context.Background()
	want := loadDemo(t)
	out := filepath.Join(t.TempDir(), "fbc")
	st, err := ConvertSQLite(ctx, demoDB(t), out, SQLiteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := fbc.LoadDir(ctx, out, fbc.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Catalog(got); err != nil {
		t.Fatalf("converted catalog is invalid: %v", err)
	}
	if st.Packages != len(want.Packages) || len(got.Packages) != len(want.Packages) {
		t.Fatalf("converted %d packages (stats %+v), want %d", len(got.Packages), st, len(want.Packages))
	}
	for i, wp := range want.Packages {
		gp := got.Packages[i]
		if gp.Name != wp.Name || gp.DefaultChannel != wp.DefaultChannel {
			t.Errorf("package %s/%s, want %s/%s", gp.Name, gp.DefaultChannel, wp.Name, wp.DefaultChannel)
		}
		if len(gp.Channels) != len(wp.Channels) {
			t.Fatalf("package %s: %d channels, want %d", wp.Name, len(gp.Channels), len(wp.Channels))
		}
		for j, wc := range wp.Channels {
			gc := gp.Channels[j]
			if gc.Name != wc.Name || !reflect.DeepEqual(entries(gc), entries(wc)) {
				t.Errorf("channel %s/%s:\n got %+v\nwant %+v", wp.Name, wc.Name, entries(gc), entries(wc))
			}
			for k, e := range wc.Entries {
				if e.SkipRange != "" && gc.Entries[k].SkipRange != e.SkipRange {
					t.Errorf("channel %s/%s, %s: skipRange %q, want %q", wp.Name, wc.Name, e.Name, gc.Entries[k].SkipRange, e.SkipRange)
				}
			}
		}
		if len(gp.Bundles) != len(wp.Bundles) {
			t.Fatalf("package %s: %d bundles, want %d", wp.Name, len(gp.Bundles), len(wp.Bundles))
		}
		for j, wb := range wp.Bundles {
			gb := gp.Bundles[j]
			if gb.Name != wb.Name || gb.Image != wb.Image || !sameImages(gb.RelatedImages, wb.RelatedImages) {
				t.Errorf("bundle %s: image %s related %v, want %s %v", wb.Name, gb.Image, gb.RelatedImages, wb.Image, wb.RelatedImages)
			}
			for _, typ := range []string{fbc.PropertyPackage, fbc.PropertyPackageRequired, fbc.PropertyGVKRequired, fbc.PropertyGVK} {
				if g, w := props(gb, typ), props(wb, typ); g != w {
					t.Errorf("bundle %s: %s properties %s, want %s", wb.Name, typ, g, w)
				}
			}
		}
	}
}

// entries are the channel's entries as SQLite keeps them: no skipRange, no
// replaces on a skipped entry.
func entries(c *fbc.Channel) []fbc.ChannelEntry {
	skipped := map[string]bool{}
	for _, e := range c.Entries {
		for _, s := range e.Skips {
			skipped[s] = true
		}
	}
	out := append([]fbc.ChannelEntry(nil), c.Entries...)
	for i := range out {
		if len(out[i].Skips) == 0 {
			out[i].Skips = nil
		}
		if skipped[out[i].Name] {
			out[i].Replaces = ""
		}
		out[i].SkipRange = ""
	}
	return out
}

func sameImages(a, b []fbc.RelatedImage) bool {
	set := func(rs []fbc.RelatedImage) map[string]bool {
		m := map[string]bool{}
		for _, r := range rs {
			m[r.Image] = true
		}
		return m
	}
	return reflect.DeepEqual(set(a), set(b))
}

func props(b *fbc.Bundle, typ string) string {
	var vs []string
	for _, p := range b.Properties {
		if p.Type == typ {
			vs = append(vs, strings.ReplaceAll(string(p.Value), " ", ""))
		}
	}
	return strings.Join(vs, ";")
}

// crafted returns a copy of the demo database changed by the SQL statements.
func crafted(t *testing.T, stmts ...string) string {
	t.Helper()
	p := demoDB(t)
	db, err := sql.Open("sqlite", "file:"+p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return p
}

func TestConvertRefuses(t *testing.T) {
	ctx := context.Background()
	text := filepath.Join(t.TempDir(), "text.db")
	if err := os.WriteFile(text, []byte("not a database\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(demoDB(t))
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(t.TempDir(), "truncated.db")
	if err := os.WriteFile(truncated, full[:len(full)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		db     string
		is     error
		substr string
	}{
		{"missing file", filepath.Join(t.TempDir(), "nope.db"), os.ErrNotExist, "nope.db"},
		{"folder", t.TempDir(), ErrNotSQLite, "not a regular file"},
		{"text file", text, ErrNotSQLite, "SQLite 3 header"},
		{"truncated", truncated, ErrBadDatabase, "truncated.db"},
		{"old schema", crafted(t, `UPDATE schema_migrations SET version = 9`), ErrBadDatabase, "schema version 9"},
		{"no schema table", crafted(t, `DROP TABLE schema_migrations`), ErrBadDatabase, "schema_migrations"},
		{"no properties table", crafted(t, `DROP TABLE properties`), ErrBadDatabase, "table properties"},
		{"default channel missing", crafted(t, `UPDATE package SET default_channel = 'nope' WHERE name = 'demo-operator'`), ErrBadDatabase, `default channel "nope"`},
		{"package without channel", crafted(t, `INSERT INTO package(name, default_channel) VALUES ('lonely', 'stable')`), ErrBadDatabase, `"lonely" has no channel`},
		{"package name escapes", crafted(t, `UPDATE package SET name = '../evil' WHERE name = 'demo-operator'`, `UPDATE channel SET package_name = '../evil' WHERE package_name = 'demo-operator'`, `UPDATE channel_entry SET package_name = '../evil' WHERE package_name = 'demo-operator'`), ErrBadDatabase, "folder name"},
		{"bad version", crafted(t, `UPDATE operatorbundle SET version = 'one' WHERE rowid = 1`), ErrBadDatabase, "not semver"},
		{"bad property", crafted(t, `UPDATE properties SET value = '{"oops"' WHERE type = 'olm.package' AND rowid = (SELECT min(rowid) FROM properties WHERE type = 'olm.package')`), ErrBadDatabase, "not valid JSON"},
		{"bad gvk", crafted(t, `INSERT INTO properties(type, value, operatorbundle_name) SELECT 'olm.gvk', '[1]', name FROM operatorbundle LIMIT 1`), ErrBadDatabase, "olm.gvk"},
		{"bad manifests", crafted(t, `UPDATE operatorbundle SET bundle = '{"kind": "ClusterServiceVersion"} [' WHERE rowid = 1`), ErrBadDatabase, "manifests"},
		{"no csv in manifests", crafted(t, `UPDATE operatorbundle SET bundle = '{"kind": "Service"}' WHERE rowid = 1`), ErrBadDatabase, "no ClusterServiceVersion"},
		{"head csv not json", crafted(t, `UPDATE operatorbundle SET csv = 'nope' WHERE name IN (SELECT head_operatorbundle_name FROM channel)`), ErrBadDatabase, "not valid JSON"},
		{"unknown channel", crafted(t, `UPDATE channel_entry SET channel_name = 'ghost' WHERE entry_id = 1`), ErrBadDatabase, `channel "ghost"`},
		{"unknown package", crafted(t, `UPDATE channel_entry SET package_name = 'ghost' WHERE entry_id = 1`), ErrBadDatabase, `package "ghost"`},
		{"replaces cycle", crafted(t, `UPDATE channel_entry SET replaces = entry_id`), validate.ErrInvalidCatalog, "valid catalog"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConvertSQLite(ctx, tc.db, filepath.Join(t.TempDir(), "out"), SQLiteOptions{})
			if err == nil || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.substr) {
				t.Fatalf("error = %v; want %v containing %q", err, tc.is, tc.substr)
			}
			if strings.Contains(err.Error(), "engine failed") {
				t.Fatalf("the driver panicked: %v", err)
			}
		})
	}
}

func TestConvertOutputFolder(t *testing.T) {
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ConvertSQLite(context.Background(), demoDB(t), out, SQLiteOptions{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("error = %v, want a refusal of the non-empty folder", err)
	}
}

// TestConvertReadOnly: the database is not changed, and a read-only copy in a
// read-only folder converts (no journal, no lock file).
func TestConvertReadOnly(t *testing.T) {
	src := demoDB(t)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "index.db")
	if err := os.WriteFile(p, b, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if _, err := ConvertSQLite(context.Background(), p, filepath.Join(t.TempDir(), "out"), SQLiteOptions{}); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(p)
	if err != nil || string(after) != string(b) {
		t.Fatalf("the database changed (%v)", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("files appeared next to the database: %v", ents)
	}
}

// FuzzConvertSQLite: any file converts or fails with an error; neither the
// conversion nor the driver panics.
func FuzzConvertSQLite(f *testing.F) {
	b, err := os.ReadFile(demoDB(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:4096])
	f.Add([]byte("SQLite format 3\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "index.db")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ConvertSQLite(context.Background(), p, filepath.Join(dir, "out"), SQLiteOptions{})
		if err != nil && strings.Contains(err.Error(), "engine failed") {
			t.Fatalf("panic inside the conversion: %v", err)
		}
		// The way catalog prune reads it: whatever converts whole also reads
		// light and completes, every bundle, and renders.
		lerr := readLightAndComplete(p)
		if lerr != nil && strings.Contains(lerr.Error(), "engine failed") {
			t.Fatalf("panic inside the light reading: %v", lerr)
		}
		if err == nil && lerr != nil {
			t.Fatalf("converts whole, but read light and completed: %v", lerr)
		}
	})
}

// readLightAndComplete reads the database at p as catalog prune does
// (SQLiteCatalog), completes every bundle and renders the result.
func readLightAndComplete(p string) error {
	ctx := context.Background()
	db, err := OpenSQLite(ctx, p, SQLiteOptions{})
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := db.Catalog(ctx)
	if err != nil {
		return err
	}
	complete := db.Completer(ctx)
	for _, pkg := range c.Packages {
		for i, b := range pkg.Bundles {
			if pkg.Bundles[i], err = complete(b); err != nil {
				return err
			}
		}
	}
	return fbc.Render(ctx, c, io.Discard, fbc.FormatJSON)
}
