package legacy

import (
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

	"github.com/airlock-mirror/airlock/prune"
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
// Each package is checked with prune.Validate before it is written, so a
// database opm would refuse to convert is refused too. The database is read-only
// and never trusted: what is wrong is reported with the table and row.
func ConvertSQLite(ctx context.Context, dbPath, outDir string, opts SQLiteOptions) (st Stats, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	defer func() {
		// The driver is pure Go; a fault inside it on a crafted file must still
		// be an error, not a crash.
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: the SQLite engine failed reading it (%v)", dbPath, ErrBadDatabase, r)
		}
	}()
	db, err := openDB(ctx, dbPath)
	if err != nil {
		return st, err
	}
	defer db.Close()
	v, err := readSchemaVersion(ctx, db)
	if err != nil {
		return st, fmt.Errorf("%s: %w", dbPath, err)
	}
	if v != SchemaVersion {
		return st, fmt.Errorf("%s: %w: schema version %d, but airlock reads version %d (what opm v1.17 and later write); update the database with opm (any `opm registry add` or `opm index add` on it migrates it) and try again", dbPath, ErrBadDatabase, v, SchemaVersion)
	}
	t, err := readTables(ctx, db)
	if err != nil {
		return st, fmt.Errorf("%s: %w", dbPath, err)
	}
	br, err := newBundleReader(ctx, db)
	if err != nil {
		return st, fmt.Errorf("%s: %w", dbPath, err)
	}
	defer br.close()

	pkgs, err := packageSkeletons(t)
	if err != nil {
		return st, fmt.Errorf("%s: %w", dbPath, err)
	}
	rowsByPkg := map[string][]*bundleRow{}
	for _, r := range channelRows(t.entries) {
		rowsByPkg[r.pkg] = append(rowsByPkg[r.pkg], r)
	}
	// opm turns every row into a bundle before it looks at packages: a row of a
	// package the package table does not name is an error.
	for pkgName := range rowsByPkg {
		if _, ok := pkgs[pkgName]; !ok {
			if err := orphan(ctx, br, t, rowsByPkg[pkgName]); err != nil {
				return st, fmt.Errorf("%s: %w", dbPath, err)
			}
		}
	}

	if err := prepareOut(outDir); err != nil {
		return st, err
	}
	root, err := os.OpenRoot(outDir)
	if err != nil {
		return st, err
	}
	defer root.Close()
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		sk := pkgs[n]
		p, err := buildPackage(ctx, br, t, sk, rowsByPkg[n], log)
		if err != nil {
			return st, fmt.Errorf("%s: package %q: %w", dbPath, n, err)
		}
		c := &prune.Catalog{Packages: []*prune.Package{p}}
		if err := prune.Validate(c); err != nil {
			return st, fmt.Errorf("%s: package %q does not convert to a valid catalog (opm v1.73 refuses it too): %w", dbPath, n, err)
		}
		if err := writePackage(ctx, root, c); err != nil {
			return st, fmt.Errorf("writing package %q to %s: %w", n, outDir, err)
		}
		st.Packages++
		st.Channels += len(p.Channels)
		st.Bundles += len(p.Bundles)
	}
	return st, nil
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
func orphan(ctx context.Context, br *bundleReader, t *tables, rows []*bundleRow) error {
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
		if p.typ.String == prune.PropertyDeprecated {
			return true
		}
	}
	return false
}

// buildPackage turns one package's rows into a prune.Package.
func buildPackage(ctx context.Context, br *bundleReader, t *tables, sk *skeleton, rows []*bundleRow, log *slog.Logger) (*prune.Package, error) {
	p := &prune.Package{Name: sk.name, DefaultChannel: sk.defaultChannel, Declared: 1}
	chans := map[string]*prune.Channel{}
	for n := range sk.channels {
		chans[n] = &prune.Channel{Name: n, Package: sk.name}
	}
	bundles := map[string]*prune.Bundle{}
	for _, r := range rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := br.read(ctx, r.bundle)
		if err != nil {
			return nil, err
		}
		if !listed(c) || deprecated(t.props[r.bundle]) {
			continue
		}
		ch, ok := chans[r.chnl]
		if !ok {
			return nil, fmt.Errorf("%w: bundle %q is in channel %q, which the channel table does not hold for the package", ErrBadDatabase, r.bundle, r.chnl)
		}
		if _, done := bundles[r.bundle]; !done {
			b, err := buildBundle(r, c, t)
			if err != nil {
				return nil, fmt.Errorf("bundle %q: %w", r.bundle, err)
			}
			bundles[r.bundle] = b
		}
		ch.Entries = append(ch.Entries, prune.ChannelEntry{Name: r.bundle, Replaces: r.replaces, Skips: r.skips, SkipRange: c.skipRng.String})
	}
	for _, ch := range chans {
		sort.SliceStable(ch.Entries, func(i, j int) bool { return ch.Entries[i].Name < ch.Entries[j].Name })
		p.Channels = append(p.Channels, ch)
	}
	sort.Slice(p.Channels, func(i, j int) bool { return p.Channels[i].Name < p.Channels[j].Name })
	for _, b := range bundles {
		p.Bundles = append(p.Bundles, b)
	}
	sort.Slice(p.Bundles, func(i, j int) bool { return p.Bundles[i].Name < p.Bundles[j].Name })
	icon, err := packageIcon(ctx, br, sk, log)
	if err != nil {
		return nil, err
	}
	p.Icon = icon
	return p, nil
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
func packageIcon(ctx context.Context, br *bundleReader, sk *skeleton, log *slog.Logger) (*prune.Icon, error) {
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
	return &prune.Icon{Data: data, MediaType: ic.MediaType}, nil
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

// writePackage writes the one-package catalog c to <package>/catalog.json
// inside root.
func writePackage(ctx context.Context, root *os.Root, c *prune.Catalog) (err error) {
	name := c.Packages[0].Name
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
	return prune.Render(ctx, c, io.Writer(f), prune.FormatJSON)
}
