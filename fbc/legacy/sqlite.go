package legacy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
)

// SQLiteOptions tune ConvertSQLite.
type SQLiteOptions struct {
	// Logger receives warnings (an icon that does not decode, say); nil
	// discards them.
	Logger *slog.Logger
}

// Stats counts what a conversion wrote.
type Stats struct {
	Packages, Channels, Bundles int
}

// ConvertSQLite converts the SQLite index database at dbPath into a file-based
// catalog written to outDir (which must not exist or be empty), one
// <package>/catalog.json per package, as `opm migrate` of opm v1.73 writes it:
//
//   - every package with its default channel and the icon of the CSV at the head
//     of that channel; every channel with its entries (replaces, skips and
//     skipRange as opm reads them from the channel graph);
//   - every bundle with its image, its properties (olm.package, olm.gvk,
//     olm.package.required and olm.gvk.required from the dependencies, every
//     other stored property, and one olm.bundle.object per manifest it holds) and
//     its related images (those of its CSV, then the ones the database lists);
//   - bundles marked deprecated (olm.deprecated) are left out, as opm does.
//
// Each package is checked with validate.Catalog before it is written, so a
// database opm would refuse to convert is refused too. The database is read-only
// and never trusted: what is wrong is reported with the table and row.
func ConvertSQLite(ctx context.Context, dbPath, outDir string, opts SQLiteOptions) (st Stats, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	defer recoverEngine(dbPath, &err)
	ix, err := openIndex(ctx, dbPath)
	if err != nil {
		return st, err
	}
	defer ix.close()
	return convertTables(ctx, ix.br, ix.t, dbPath, outDir, log)
}

// bundleSource gives the content of operatorbundle rows: a database
// (bundleReader) or what a package-manifest folder loads (manifestDB).
type bundleSource interface {
	// read reads a bundle's row, its manifests (operatorbundle.bundle) included.
	read(ctx context.Context, name string) (bundleContent, error)
	// readLight reads a bundle's row without its manifests.
	readLight(ctx context.Context, name string) (bundleContent, error)
	// readCSV returns operatorbundle.csv of a bundle and whether the row exists.
	readCSV(ctx context.Context, name string) (string, bool, error)
}

// convertTables is the conversion proper, from the tables of an index database
// (read from a file or built from package manifests) to outDir; src names the
// input in errors.
func convertTables(ctx context.Context, br bundleSource, t *tables, src, outDir string, log *slog.Logger) (st Stats, err error) {
	g, err := readGraph(ctx, br, t)
	if err != nil {
		return st, fmt.Errorf("%s: %w", src, err)
	}
	if err := prepareOut(outDir); err != nil {
		return st, err
	}
	root, err := os.OpenRoot(outDir)
	if err != nil {
		return st, err
	}
	defer root.Close()
	for _, n := range g.names {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		p, err := convertPackage(ctx, br, t, g.pkgs[n], g.rowsByPkg[n], root, log)
		if err != nil {
			return st, fmt.Errorf("%s: package %q: %w", src, n, err)
		}
		st.Packages++
		st.Channels += len(p.Channels)
		st.Bundles += len(p.Bundles)
	}
	return st, nil
}

// graph is what the package, channel and channel_entry tables say: the
// packages (names sorted) and the rows of their bundles.
type graph struct {
	pkgs      map[string]*skeleton
	rowsByPkg map[string][]*bundleRow
	names     []string
}

// readGraph reads the packages and the rows of their bundles. Like opm, which
// turns every row into a bundle before it looks at packages, a row of a
// package the package table does not name is an error.
func readGraph(ctx context.Context, br bundleSource, t *tables) (*graph, error) {
	pkgs, err := packageSkeletons(t)
	if err != nil {
		return nil, err
	}
	g := &graph{pkgs: pkgs, rowsByPkg: map[string][]*bundleRow{}}
	for _, r := range channelRows(t.entries) {
		g.rowsByPkg[r.pkg] = append(g.rowsByPkg[r.pkg], r)
	}
	for pkgName := range g.rowsByPkg {
		if _, ok := pkgs[pkgName]; !ok {
			if err := orphan(ctx, br, t, g.rowsByPkg[pkgName]); err != nil {
				return nil, err
			}
		}
	}
	for n := range pkgs {
		g.names = append(g.names, n)
	}
	sort.Strings(g.names)
	return g, nil
}

// skeleton is a package as the package and channel tables describe it.
type skeleton struct {
	name, defaultChannel string
	channels             map[string]string // name → head bundle
}

// packageSkeletons reads the packages and their channels. Like opm, a package
// needs at least one channel and its default channel must be one of them.
func packageSkeletons(t *tables) (map[string]*skeleton, error) {
	out := map[string]*skeleton{}
	for _, r := range t.packages {
		if !r.name.Valid {
			continue
		}
		if _, dup := out[r.name.String]; dup {
			continue
		}
		out[r.name.String] = &skeleton{name: r.name.String, defaultChannel: r.defaultChannel.String, channels: map[string]string{}}
	}
	for _, c := range t.channels {
		if !c.pkg.Valid {
			continue
		}
		if sk, ok := out[c.pkg.String]; ok {
			if _, dup := sk.channels[c.name.String]; !dup {
				sk.channels[c.name.String] = c.head.String
			}
		}
	}
	for _, sk := range out {
		if err := checkName("package", sk.name); err != nil {
			return nil, err
		}
		if len(sk.channels) == 0 {
			return nil, fmt.Errorf("%w: package %q has no channel (table channel)", ErrBadDatabase, sk.name)
		}
		if _, ok := sk.channels[sk.defaultChannel]; !ok {
			return nil, fmt.Errorf("%w: package %q: its default channel %q is not one of its channels (tables package and channel)", ErrBadDatabase, sk.name, sk.defaultChannel)
		}
	}
	return out, nil
}

// checkName refuses a package name that cannot be a folder of the output.
func checkName(what, n string) error {
	if n == "" || n == "." || n == ".." || strings.ContainsAny(n, `/\`) || strings.ContainsRune(n, 0) {
		return fmt.Errorf("%w: %s name %q cannot be used as a folder name", ErrBadDatabase, what, n)
	}
	return nil
}

// orphan reports rows whose package the package table does not hold, unless
// opm would skip them anyway (a deprecated or incomplete bundle).
func orphan(ctx context.Context, br bundleSource, t *tables, rows []*bundleRow) error {
	for _, r := range rows {
		c, err := br.read(ctx, r.bundle)
		if err != nil {
			return err
		}
		if !listed(c) || deprecated(t.props[r.bundle]) {
			continue
		}
		return fmt.Errorf("%w: bundle %q is in channel %q of package %q, which the package table does not hold", ErrBadDatabase, r.bundle, r.chnl, r.pkg)
	}
	return nil
}

// listed reports whether opm lists a bundle row at all: it needs an
// operatorbundle row with a version and a bundle path.
func listed(c bundleContent) bool { return c.found && c.version.Valid && c.path.Valid }

func deprecated(props []kv) bool {
	for _, p := range props {
		if p.typ.String == fbc.PropertyDeprecated {
			return true
		}
	}
	return false
}

// listedBundles are the bundles of a package that opm lists, in name order,
// with the row of each (its first in channel_entry order) and its
// operatorbundle row without the manifests.
type listedBundles struct {
	names []string
	row   map[string]*bundleRow
	light map[string]bundleContent
}

// packageModel builds package sk without its bundles: the package (its icon
// read from the CSV at the head of the default channel) and its channels, and
// the bundles it lists.
func packageModel(ctx context.Context, br bundleSource, t *tables, sk *skeleton, rows []*bundleRow, log *slog.Logger) (*fbc.Package, *listedBundles, error) {
	p := &fbc.Package{Name: sk.name, DefaultChannel: sk.defaultChannel, Declared: 1}
	chans := map[string]*fbc.Channel{}
	for n := range sk.channels {
		chans[n] = &fbc.Channel{Name: n, Package: sk.name}
	}
	lb := &listedBundles{row: map[string]*bundleRow{}, light: map[string]bundleContent{}}
	read := map[string]bundleContent{} // a bundle in several channels is read once
	for _, r := range rows {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		c, ok := read[r.bundle]
		if !ok {
			var err error
			if c, err = br.readLight(ctx, r.bundle); err != nil {
				return nil, nil, err
			}
			read[r.bundle] = c
		}
		if !listed(c) || deprecated(t.props[r.bundle]) {
			continue
		}
		ch, ok := chans[r.chnl]
		if !ok {
			return nil, nil, fmt.Errorf("%w: bundle %q is in channel %q, which the channel table does not hold for the package", ErrBadDatabase, r.bundle, r.chnl)
		}
		if _, seen := lb.row[r.bundle]; !seen {
			lb.row[r.bundle] = r
			lb.light[r.bundle] = c
			lb.names = append(lb.names, r.bundle)
		}
		ch.Entries = append(ch.Entries, fbc.ChannelEntry{Name: r.bundle, Replaces: r.replaces, Skips: r.skips, SkipRange: c.skipRng.String})
	}
	for _, ch := range chans {
		sort.SliceStable(ch.Entries, func(i, j int) bool { return ch.Entries[i].Name < ch.Entries[j].Name })
		p.Channels = append(p.Channels, ch)
	}
	sort.Slice(p.Channels, func(i, j int) bool { return p.Channels[i].Name < p.Channels[j].Name })
	icon, err := packageIcon(ctx, br, sk, log)
	if err != nil {
		return nil, nil, err
	}
	p.Icon = icon
	sort.Strings(lb.names)
	return p, lb, nil
}

// convertPackage converts one package and writes it to <package>/catalog.json
// in root: the olm.package document and the channels first, then each bundle as
// soon as it is built, so that only one bundle's manifests are in memory at a
// time. The package is then checked (modelCheck) on a light copy (no bundle
// manifests); a package that fails is removed again. It returns the light copy.
func convertPackage(ctx context.Context, br bundleSource, t *tables, sk *skeleton, rows []*bundleRow, root *os.Root, log *slog.Logger) (*fbc.Package, error) {
	p, lb, err := packageModel(ctx, br, t, sk, rows, log)
	if err != nil {
		return nil, err
	}
	if err := writeStream(ctx, root, p.Name, func(w io.Writer) error {
		if err := fbc.Render(ctx, &fbc.Catalog{Packages: []*fbc.Package{p}}, w, fbc.FormatJSON); err != nil {
			return err
		}
		var objBuf []byte // each bundle is rendered before the next is built
		for _, n := range lb.names {
			c, err := br.read(ctx, n)
			if err != nil {
				return err
			}
			b, err := buildBundle(lb.row[n], c, t, &objBuf)
			if err != nil {
				return fmt.Errorf("bundle %q: %w", n, err)
			}
			one := &fbc.Package{Name: p.Name, Bundles: []*fbc.Bundle{b}}
			if err := fbc.Render(ctx, &fbc.Catalog{Packages: []*fbc.Package{one}}, w, fbc.FormatJSON); err != nil {
				return err
			}
			p.Bundles = append(p.Bundles, lightBundle(b))
		}
		return nil
	}); err != nil {
		_ = root.RemoveAll(p.Name)
		return nil, err
	}
	if err := modelCheck(&fbc.Catalog{Packages: []*fbc.Package{p}}); err != nil {
		_ = root.RemoveAll(p.Name)
		return nil, invalidPackage(err)
	}
	return p, nil
}

// invalidPackage is the error of a package that fails modelCheck.
func invalidPackage(err error) error {
	return fmt.Errorf("it does not convert to a valid catalog (opm v1.73 refuses it too): %w", err)
}

// lightBundle is b without its manifests (one is kept when the bundle has no
// image: a bundle needs an image or manifests).
func lightBundle(b *fbc.Bundle) *fbc.Bundle {
	l := *b
	l.Properties = nil
	kept := false
	for _, pr := range b.Properties {
		if pr.Type == fbc.PropertyBundleObject {
			if kept || b.Image != "" {
				continue
			}
			kept = true
			// A copy: the values of a bundle's objects share one buffer.
			pr.Value = bytes.Clone(pr.Value)
		}
		l.Properties = append(l.Properties, pr)
	}
	return &l
}

// csvIcon is the part of a CSV the package icon comes from.
type csvIcon struct {
	Spec struct {
		Icon []struct {
			Data      string `json:"base64data"`
			MediaType string `json:"mediatype"`
		} `json:"icon"`
	} `json:"spec"`
}

// packageIcon is the first icon of the CSV (operatorbundle.csv) at the head of
// the default channel. Like opm, a head without a CSV is an error and an icon
// that is not base64 (even without its spaces) is left out with a warning.
func packageIcon(ctx context.Context, br bundleSource, sk *skeleton, log *slog.Logger) (*fbc.Icon, error) {
	head := sk.channels[sk.defaultChannel]
	csv, ok, err := br.readCSV(ctx, head)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the head %q of the default channel %q has no row in table operatorbundle", ErrBadDatabase, head, sk.defaultChannel)
	}
	var c csvIcon
	if err := json.Unmarshal([]byte(csv), &c); err != nil {
		return nil, fmt.Errorf("%w: the CSV of %q, the head of the default channel %q (operatorbundle.csv), is not valid JSON: %v", ErrBadDatabase, head, sk.defaultChannel, err)
	}
	if len(c.Spec.Icon) == 0 {
		return nil, nil
	}
	ic := c.Spec.Icon[0]
	data, err := base64.StdEncoding.DecodeString(ic.Data)
	if err != nil {
		data, err = base64.StdEncoding.DecodeString(strings.ReplaceAll(ic.Data, " ", ""))
		if err != nil {
			log.Warn("leaving out a package icon that is not base64", "package", sk.name, "bundle", head, "error", err)
			return nil, nil
		}
	}
	if len(data) == 0 {
		return nil, nil
	}
	return &fbc.Icon{Data: data, MediaType: ic.MediaType}, nil
}

// prepareOut creates outDir, which must be empty if it exists.
func prepareOut(dir string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(ents) > 0:
		return fmt.Errorf("output folder %s is not empty", dir)
	}
	return nil
}

// writeStream creates <name>/catalog.json in root and lets body write it.
func writeStream(ctx context.Context, root *os.Root, name string, body func(io.Writer) error) (err error) {
	if err := root.Mkdir(name, 0o755); err != nil {
		return err
	}
	f, err := root.Create(filepath.Join(name, "catalog.json"))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := body(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// modelCheck is the validation opm v1.73 applies to the model it builds from a
// database: validate.Catalog without the image reference checks, which opm's
// model validation does not make (real indexes name related images such as
// "oci://…" that are no image pull specs). Those problems stay for
// `catalog validate` and for the catalogs mirror prunes from the result.
func modelCheck(c *fbc.Catalog) error {
	err := validate.Catalog(c)
	var ve *validate.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	kept := &validate.ValidationError{}
	for _, p := range ve.Problems {
		if !strings.Contains(p.Message, "invalid image pull spec") {
			kept.Problems = append(kept.Problems, p)
		}
	}
	if len(kept.Problems) == 0 {
		return nil
	}
	return kept
}
