package conformance

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/registry"
	"github.com/operator-framework/operator-registry/pkg/sqlite"
	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// opmManifestsDB builds, with operator-registry's own loader (the code behind
// `opm registry add` of a package-manifest directory), a SQLite index database
// from the package-manifest directory dir and returns its path and the error
// the loader reported (a loader error still leaves what it could load).
func opmManifestsDB(t testing.TB, dir string) (string, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "index.db")
	db, loader := opmLoader(t, file)
	defer db.Close()
	return file, sqlite.NewSQLLoaderForDirectory(loader, dir).Populate()
}

// opmLoader opens a new database at file, migrated to the latest schema.
func opmLoader(t testing.TB, file string) (*sql.DB, sqlite.MigratableLoader) {
	t.Helper()
	logrus.SetLevel(logrus.WarnLevel)
	db, err := sqlite.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	loader, err := sqlite.NewSQLLiteLoader(db, sqlite.WithEnableAlpha(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := loader.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db, loader
}

// opmCatalogDB builds, with operator-registry's loader, a SQLite index database
// holding the file-based catalog in dir as opm's model loads it. SQLite keeps
// one replaces, skips and skipRange per bundle (those of its CSV), so each
// bundle gets the edges of its entry in the package's default channel (else of
// the first channel that holds it), and each channel is then rebuilt by the
// loader from its head, as `opm index add` did. Packages the loader refuses
// (channels whose graphs disagree) are left out and counted.
func opmCatalogDB(t testing.TB, dir string) (file string, loaded, refused int) {
	t.Helper()
	cfg, err := declcfg.LoadFS(t.Context(), os.DirFS(dir))
	if err != nil {
		t.Fatalf("opm loading %s: %v", dir, err)
	}
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		t.Fatalf("opm converting %s: %v", dir, err)
	}
	file = filepath.Join(t.TempDir(), "index.db")
	db, loader := opmLoader(t, file)
	defer db.Close()
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := loadPackage(loader, m[n]); err != nil {
			t.Logf("%s: opm's loader refused package %s: %v", dir, n, err)
			refused++
			continue
		}
		loaded++
	}
	return file, loaded, refused
}

func loadPackage(loader sqlite.MigratableLoader, p *model.Package) error {
	chNames := make([]string, 0, len(p.Channels))
	for n := range p.Channels {
		chNames = append(chNames, n)
	}
	sort.Strings(chNames)
	if p.DefaultChannel != nil {
		chNames = append([]string{p.DefaultChannel.Name}, chNames...)
	}
	done := map[string]bool{}
	manifest := registry.PackageManifest{PackageName: p.Name, DefaultChannelName: p.DefaultChannel.Name}
	for _, cn := range chNames {
		ch := p.Channels[cn]
		if !done["channel/"+cn] {
			done["channel/"+cn] = true
			head, err := ch.Head()
			if err != nil {
				return err
			}
			manifest.Channels = append(manifest.Channels, registry.PackageChannel{Name: cn, CurrentCSVName: head.Name})
		}
		bnames := make([]string, 0, len(ch.Bundles))
		for bn := range ch.Bundles {
			bnames = append(bnames, bn)
		}
		sort.Strings(bnames)
		for _, bn := range bnames {
			if done[bn] {
				continue
			}
			done[bn] = true
			b, err := registryBundle(p, ch.Bundles[bn])
			if err != nil {
				return fmt.Errorf("bundle %s: %w", bn, err)
			}
			if err := loader.AddOperatorBundle(b); err != nil {
				return fmt.Errorf("bundle %s: %w", bn, err)
			}
		}
	}
	return loader.AddPackageChannels(manifest)
}

// registryBundle makes the registry.Bundle `opm index add` would have read from
// the bundle image of b: its manifests (olm.bundle.object, or a CSV made from
// olm.csv.metadata), with the edges of its channel entry in the CSV.
func registryBundle(p *model.Package, b *model.Bundle) (*registry.Bundle, error) {
	var objs []*unstructured.Unstructured
	var csv *unstructured.Unstructured
	var meta *property.CSVMetadata
	var props []registry.Property
	var deps []*registry.Dependency
	version := b.Version.String()
	for _, pr := range b.Properties {
		switch pr.Type {
		case property.TypeBundleObject:
			var bo property.BundleObject
			if err := json.Unmarshal(pr.Value, &bo); err != nil {
				return nil, err
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(bo.Data); err != nil {
				return nil, err
			}
			if u.GetKind() == "ClusterServiceVersion" {
				csv = u
			}
			objs = append(objs, u)
		case property.TypeCSVMetadata:
			meta = &property.CSVMetadata{}
			if err := json.Unmarshal(pr.Value, meta); err != nil {
				return nil, err
			}
		case property.TypePackage:
		case property.TypePackageRequired:
			var v property.PackageRequired
			if err := json.Unmarshal(pr.Value, &v); err != nil {
				return nil, err
			}
			raw, _ := json.Marshal(map[string]string{"packageName": v.PackageName, "version": v.VersionRange})
			deps = append(deps, &registry.Dependency{Type: "olm.package", Value: raw})
		case property.TypeGVKRequired:
			deps = append(deps, &registry.Dependency{Type: "olm.gvk", Value: pr.Value})
		default:
			props = append(props, registry.Property{Type: pr.Type, Value: pr.Value})
		}
	}
	if csv == nil {
		csv = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operators.coreos.com/v1alpha1",
			"kind":       "ClusterServiceVersion",
			"metadata":   map[string]any{"name": b.Name},
			"spec":       map[string]any{},
		}}
		if meta != nil {
			ann := map[string]any{}
			for k, v := range meta.Annotations {
				ann[k] = v
			}
			csv.SetAnnotations(nil)
			_ = unstructured.SetNestedMap(csv.Object, ann, "metadata", "annotations")
			_ = unstructured.SetNestedField(csv.Object, meta.DisplayName, "spec", "displayName")
		}
		var rel []any
		for _, ri := range b.RelatedImages {
			rel = append(rel, map[string]any{"name": ri.Name, "image": ri.Image})
		}
		if len(rel) > 0 {
			_ = unstructured.SetNestedSlice(csv.Object, rel, "spec", "relatedImages")
		}
		if p.Icon != nil {
			_ = unstructured.SetNestedSlice(csv.Object, []any{map[string]any{"base64data": encodeB64(p.Icon.Data), "mediatype": p.Icon.MediaType}}, "spec", "icon")
		}
		objs = append(objs, csv)
	}
	_ = unstructured.SetNestedField(csv.Object, version, "spec", "version")
	unstructured.RemoveNestedField(csv.Object, "spec", "replaces")
	unstructured.RemoveNestedField(csv.Object, "spec", "skips")
	// The loader refuses a replaces naming a bundle it does not hold (FBC allows
	// it at the tail of a channel): leave such an edge out.
	if _, known := inPackage(p, b.Replaces); known {
		_ = unstructured.SetNestedField(csv.Object, b.Replaces, "spec", "replaces")
	}
	if len(b.Skips) > 0 {
		s := make([]any, len(b.Skips))
		for i, v := range b.Skips {
			s[i] = v
		}
		_ = unstructured.SetNestedSlice(csv.Object, s, "spec", "skips")
	}
	ann := csv.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	delete(ann, "olm.skipRange")
	if b.SkipRange != "" {
		ann["olm.skipRange"] = b.SkipRange
	}
	delete(ann, "operatorframework.io/properties")
	delete(ann, "operators.operatorframework.io/properties")
	csv.SetAnnotations(ann)
	csv.SetName(b.Name)
	rb := registry.NewBundle(b.Name, &registry.Annotations{PackageName: p.Name, Channels: b.Channel.Name, DefaultChannelName: p.DefaultChannel.Name}, objs...)
	rb.BundleImage = b.Image
	rb.Properties = props
	rb.Dependencies = deps
	return rb, nil
}

// inPackage returns the bundle of p named name, if any.
func inPackage(p *model.Package, name string) (*model.Bundle, bool) {
	for _, ch := range p.Channels {
		if b, ok := ch.Bundles[name]; ok {
			return b, true
		}
	}
	return nil, false
}

// TestBuildSQLiteDB is a tool, not a test: with AIRLOCK_SQLITE_FROM=DIR (a
// file-based catalog root, e.g. the unpacked shared/fixtures/large) and
// AIRLOCK_SQLITE_TO=FILE it builds FILE, a SQLite index database of every package
// of DIR, with opm's loader (package by package, to bound memory). The
// benchmark database of docs/benchmarks.md is made this way.
func TestBuildSQLiteDB(t *testing.T) {
	from, to := os.Getenv("AIRLOCK_SQLITE_FROM"), os.Getenv("AIRLOCK_SQLITE_TO")
	if from == "" || to == "" {
		t.Skip("set AIRLOCK_SQLITE_FROM and AIRLOCK_SQLITE_TO to build a database")
	}
	db, loader := opmLoader(t, to)
	defer db.Close()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	loaded, refused, bundles := 0, 0, 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		cfg, err := declcfg.LoadFS(t.Context(), os.DirFS(filepath.Join(from, e.Name())))
		if err != nil {
			t.Fatal(err)
		}
		m, err := declcfg.ConvertToModel(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			if err := loadPackage(loader, p); err != nil {
				t.Logf("opm's loader refused package %s: %v", p.Name, err)
				refused++
				continue
			}
			loaded++
			bundles += len(cfg.Bundles)
		}
	}
	t.Logf("%s: %d packages (%d bundles) loaded, %d refused", to, loaded, bundles, refused)
}
