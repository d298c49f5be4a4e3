// Package sqliteindex writes SQLite index databases like the ones `opm index add`
// built (schema version 13 of operator-registry): `airlock registry seed` packs
// them into SQLite-based catalog images (internal/seed), and tests, fuzz seeds
// and benchmarks use them; the conversion in fbc/legacy reads them back. The channel graph
// is stored the way opm's loader stored it (a head entry at depth 0, the
// replaces chain below it, and for each skip a synthetic pair of entries).
//
// It knows the catalog model (prune) and the database schema only: not
// registries, images or how the pipeline uses a database.
package sqliteindex

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	_ "modernc.org/sqlite" // the driver fbc/legacy reads with

	"github.com/airlock-mirror/airlock/fbc"
)

// schema is the index database schema at version 13.
var schema = []string{
	`CREATE TABLE schema_migrations (version bigint NOT NULL, timestamp DATETIME DEFAULT CURRENT_TIMESTAMP)`,
	`CREATE TABLE api (group_name TEXT, version TEXT, kind TEXT, plural TEXT NOT NULL, PRIMARY KEY(group_name, version, kind))`,
	`CREATE TABLE operatorbundle (name TEXT PRIMARY KEY, csv TEXT, bundle TEXT, bundlepath TEXT, skiprange TEXT, version TEXT, replaces TEXT, skips TEXT, substitutesfor TEXT)`,
	`CREATE TABLE package (name TEXT PRIMARY KEY, default_channel TEXT)`,
	`CREATE TABLE channel (name TEXT, package_name TEXT, head_operatorbundle_name TEXT, PRIMARY KEY(name, package_name))`,
	`CREATE TABLE channel_entry (entry_id INTEGER PRIMARY KEY, channel_name TEXT, package_name TEXT, operatorbundle_name TEXT, replaces INTEGER, depth INTEGER)`,
	`CREATE TABLE related_image (image TEXT, operatorbundle_name TEXT)`,
	`CREATE TABLE api_provider (group_name TEXT, version TEXT, kind TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT)`,
	`CREATE TABLE api_requirer (group_name TEXT, version TEXT, kind TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT)`,
	`CREATE UNIQUE INDEX pk ON operatorbundle(name, version, bundlepath)`,
	`CREATE TABLE dependencies (type TEXT, value TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT)`,
	`CREATE TABLE properties (type TEXT, value TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT)`,
	`CREATE TABLE deprecated (operatorbundle_name TEXT PRIMARY KEY)`,
	`INSERT INTO schema_migrations(version, timestamp) VALUES (13, '2021-01-01 00:00:00')`,
}

// Write creates the database file at path (which must not exist) holding the
// catalog c. Each bundle's manifests are its olm.bundle.object values (or, when
// it has none, a minimal CSV with its related images and the package icon); its
// olm.package.required and olm.gvk.required properties become dependencies; its
// other properties are stored as they are.
func Write(ctx context.Context, c *fbc.Catalog, path string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s already exists", path)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, s := range schema {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	w := &writer{ctx: ctx, tx: tx}
	for _, p := range c.Packages {
		if err := w.pkg(p); err != nil {
			return fmt.Errorf("package %s: %w", p.Name, err)
		}
	}
	return tx.Commit()
}

type writer struct {
	ctx    context.Context
	tx     *sql.Tx
	nextID int64
}

func (w *writer) exec(q string, args ...any) (sql.Result, error) {
	return w.tx.ExecContext(w.ctx, q, args...)
}

func (w *writer) pkg(p *fbc.Package) error {
	if _, err := w.exec(`INSERT INTO package(name, default_channel) VALUES (?, ?)`, p.Name, p.DefaultChannel); err != nil {
		return err
	}
	for _, b := range p.Bundles {
		if err := w.bundle(p, b); err != nil {
			return fmt.Errorf("bundle %s: %w", b.Name, err)
		}
	}
	for _, ch := range p.Channels {
		if err := w.channel(p, ch); err != nil {
			return fmt.Errorf("channel %s: %w", ch.Name, err)
		}
	}
	return nil
}

// channel stores a channel's graph as opm's loader did.
func (w *writer) channel(p *fbc.Package, ch *fbc.Channel) error {
	entries := map[string]fbc.ChannelEntry{}
	incoming := map[string]bool{}
	for _, e := range ch.Entries {
		entries[e.Name] = e
		if e.Replaces != "" {
			incoming[e.Replaces] = true
		}
		for _, s := range e.Skips {
			incoming[s] = true
		}
	}
	head := ""
	for _, e := range ch.Entries {
		if !incoming[e.Name] {
			head = e.Name
			break
		}
	}
	if head == "" {
		return fmt.Errorf("no head")
	}
	if _, err := w.exec(`INSERT INTO channel(name, package_name, head_operatorbundle_name) VALUES (?, ?, ?)`, ch.Name, p.Name, head); err != nil {
		return err
	}
	add := func(bundle string, depth int) (int64, error) {
		w.nextID++
		_, err := w.exec(`INSERT INTO channel_entry(entry_id, channel_name, package_name, operatorbundle_name, depth) VALUES (?, ?, ?, ?, ?)`, w.nextID, ch.Name, p.Name, bundle, depth)
		return w.nextID, err
	}
	link := func(from, to int64) error {
		_, err := w.exec(`UPDATE channel_entry SET replaces = ? WHERE entry_id = ?`, to, from)
		return err
	}
	cur, depth := head, 0
	id, err := add(cur, depth)
	if err != nil {
		return err
	}
	seen := map[string]bool{head: true}
	for {
		depth++
		e := entries[cur]
		for _, s := range e.Skips {
			sid, err := add(s, depth)
			if err != nil {
				return err
			}
			pid, err := add(cur, depth)
			if err != nil {
				return err
			}
			if err := link(pid, sid); err != nil {
				return err
			}
			depth++
		}
		if e.Replaces == "" || seen[e.Replaces] {
			return nil
		}
		seen[e.Replaces] = true
		rid, err := add(e.Replaces, depth)
		if err != nil {
			return err
		}
		if err := link(id, rid); err != nil {
			return err
		}
		id, cur = rid, e.Replaces
	}
}

func (w *writer) bundle(p *fbc.Package, b *fbc.Bundle) error {
	version := ""
	var objs []string
	for _, pr := range b.Properties {
		switch pr.Type {
		case fbc.PropertyPackage:
			var v struct {
				Version string `json:"version"`
			}
			if err := json.Unmarshal(pr.Value, &v); err != nil {
				return err
			}
			version = v.Version
		case fbc.PropertyBundleObject:
			var v struct {
				Data []byte `json:"data"`
			}
			if err := json.Unmarshal(pr.Value, &v); err != nil {
				return err
			}
			objs = append(objs, string(v.Data))
		}
	}
	csv := ""
	for i, o := range objs {
		var m map[string]any
		if err := json.Unmarshal([]byte(o), &m); err != nil {
			return err
		}
		if m["kind"] != "ClusterServiceVersion" {
			continue
		}
		// The CSV lists the bundle's related images (the catalog's, which
		// may have been rewritten), as the database's conversion reads them.
		spec, _ := m["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
			m["spec"] = spec
		}
		spec["relatedImages"] = b.RelatedImages
		raw, err := json.Marshal(m)
		if err != nil {
			return err
		}
		objs[i], csv = string(raw), string(raw)
	}
	if csv == "" {
		spec := map[string]any{"version": version, "relatedImages": b.RelatedImages}
		if p.Icon != nil {
			spec["icon"] = []map[string]string{{"base64data": base64.StdEncoding.EncodeToString(p.Icon.Data), "mediatype": p.Icon.MediaType}}
		}
		raw, err := json.Marshal(map[string]any{
			"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
			"metadata": map[string]any{"name": b.Name}, "spec": spec,
		})
		if err != nil {
			return err
		}
		csv = string(raw)
		objs = append(objs, csv)
	}
	skipRange := ""
	for _, ch := range p.Channels {
		for _, e := range ch.Entries {
			if e.Name == b.Name && e.SkipRange != "" {
				skipRange = e.SkipRange
			}
		}
	}
	if _, err := w.exec(`INSERT INTO operatorbundle(name, csv, bundle, bundlepath, version, skiprange) VALUES (?, ?, ?, ?, ?, ?)`,
		b.Name, csv, strings.Join(objs, ""), b.Image, version, skipRange); err != nil {
		return err
	}
	for _, ri := range b.RelatedImages {
		if _, err := w.exec(`INSERT INTO related_image(image, operatorbundle_name) VALUES (?, ?)`, ri.Image, b.Name); err != nil {
			return err
		}
	}
	for _, pr := range b.Properties {
		table, typ, val := "properties", pr.Type, string(pr.Value)
		switch pr.Type {
		case fbc.PropertyBundleObject, fbc.PropertyCSVMetadata:
			continue
		case fbc.PropertyPackageRequired:
			var v struct {
				PackageName  string `json:"packageName"`
				VersionRange string `json:"versionRange"`
			}
			if err := json.Unmarshal(pr.Value, &v); err != nil {
				return err
			}
			raw, _ := json.Marshal(map[string]string{"packageName": v.PackageName, "version": v.VersionRange})
			table, typ, val = "dependencies", fbc.PropertyPackage, string(raw)
		case fbc.PropertyGVKRequired:
			table, typ = "dependencies", fbc.PropertyGVK
		}
		if _, err := w.exec(`INSERT INTO `+table+`(type, value, operatorbundle_name, operatorbundle_version, operatorbundle_path) VALUES (?, ?, ?, ?, ?)`,
			typ, val, b.Name, version, b.Image); err != nil {
			return err
		}
	}
	return nil
}
