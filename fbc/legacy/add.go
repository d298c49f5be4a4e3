package legacy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
)

// ErrCannotAdd is returned (wrapped) when a bundle cannot be added to a
// catalog as asked.
var ErrCannotAdd = errors.New("cannot add the bundle")

// AddOptions say where a bundle goes in a catalog.
type AddOptions struct {
	// Channel is the channel to add the bundle to (created when missing).
	Channel string
	// Replaces is the entry the bundle replaces; empty means the CSV's
	// spec.replaces when that bundle is in the channel. Set ReplacesSet to
	// force it (an empty Replaces then means none).
	Replaces    string
	ReplacesSet bool
	// Skips are the entries the bundle skips; nil means the CSV's spec.skips.
	Skips []string
	// SkipRange is the bundle's skipRange; empty means the CSV's annotation
	// olm.skipRange.
	SkipRange string
}

// AddResult says what AddBundle did.
type AddResult struct {
	Package, Channel, Bundle string
	// Replaces, Skips and SkipRange are the new channel entry's edges.
	Replaces  string
	Skips     []string
	SkipRange string
	// NewPackage and NewChannel are set when they were created.
	NewPackage, NewChannel bool
	// Head is the channel's head after the change.
	Head string
}

// AddBundle adds the rendered bundle info to cat: the olm.bundle in its
// package (the package is created, with opts.Channel as default channel, when
// the catalog lacks it) and an entry in opts.Channel (created when missing).
// The entry replaces the CSV's spec.replaces when that bundle is in the channel
// (or opts.Replaces, which must be), skips the CSV's spec.skips (or
// opts.Skips) and has the CSV's skipRange (or opts.SkipRange). A bundle of the
// same name, or the same version in the package, is refused; so is an entry
// that would leave the channel with two heads. The catalog is then checked with
// validate.Catalog: nothing is changed unless the result is valid.
func AddBundle(cat *fbc.Catalog, info *BundleInfo, opts AddOptions) (*AddResult, error) {
	b := info.Bundle
	if opts.Channel == "" {
		return nil, fmt.Errorf("%w: no channel given (the bundle's annotations name %s)", ErrCannotAdd, strings.Join(info.Channels, ", "))
	}
	if b.Package == "" {
		return nil, fmt.Errorf("%w: bundle %s names no package (annotation operators.operatorframework.io.bundle.package.v1)", ErrCannotAdd, b.Name)
	}
	if _, err := semver.Parse(info.Version); err != nil {
		return nil, fmt.Errorf("%w: bundle %s: its version %q is not semver: %v", ErrCannotAdd, b.Name, info.Version, err)
	}
	res := &AddResult{Package: b.Package, Channel: opts.Channel, Bundle: b.Name}
	var pkg *fbc.Package
	for _, p := range cat.Packages {
		if p.Name == b.Package {
			pkg = p
		}
	}
	// Work on copies: cat changes only when everything is valid.
	var np fbc.Package
	if pkg == nil {
		res.NewPackage = true
		np = fbc.Package{Name: b.Package, DefaultChannel: opts.Channel, Declared: 1}
	} else {
		np = *pkg
		np.Channels = slices.Clone(pkg.Channels)
		np.Bundles = slices.Clone(pkg.Bundles)
	}
	for _, ob := range np.Bundles {
		if ob.Name == b.Name {
			return nil, fmt.Errorf("%w: package %s already holds bundle %s; remove it first or bump the CSV's version", ErrCannotAdd, b.Package, b.Name)
		}
		if v, err := fbc.BundleVersion(ob); err == nil && v.String() == info.Version {
			return nil, fmt.Errorf("%w: package %s already holds version %s (bundle %s)", ErrCannotAdd, b.Package, info.Version, ob.Name)
		}
	}
	var ch *fbc.Channel
	idx := -1
	for i, c := range np.Channels {
		if c.Name == opts.Channel {
			cc := *c
			cc.Entries = slices.Clone(c.Entries)
			ch, idx = &cc, i
		}
	}
	if ch == nil {
		res.NewChannel = true
		ch = &fbc.Channel{Name: opts.Channel, Package: b.Package}
	}
	inChannel := map[string]bool{}
	for _, e := range ch.Entries {
		inChannel[e.Name] = true
	}
	var names []string
	for _, e := range ch.Entries {
		names = append(names, e.Name)
	}
	e := fbc.ChannelEntry{Name: b.Name, Skips: info.Skips, SkipRange: info.SkipRange}
	switch {
	case opts.ReplacesSet || opts.Replaces != "":
		if opts.Replaces != "" && !inChannel[opts.Replaces] {
			return nil, fmt.Errorf("%w: --replaces %s is not in channel %s of package %s (its entries: %s)", ErrCannotAdd, opts.Replaces, opts.Channel, b.Package, listOrNone(names))
		}
		e.Replaces = opts.Replaces
	case inChannel[info.Replaces]:
		e.Replaces = info.Replaces
	}
	if opts.Skips != nil {
		e.Skips = opts.Skips
	}
	if opts.SkipRange != "" {
		if _, err := semver.ParseRange(opts.SkipRange); err != nil {
			return nil, fmt.Errorf("%w: --skip-range %q: %v", ErrCannotAdd, opts.SkipRange, err)
		}
		e.SkipRange = opts.SkipRange
	}
	// The channel must keep one head: the new bundle must replace or skip the
	// current head (or the channel is new).
	if len(ch.Entries) > 0 {
		head, err := fbc.NewGraph(ch).Head()
		if err == nil && head != e.Replaces && !slices.Contains(e.Skips, head) {
			return nil, fmt.Errorf("%w: channel %s of package %s has head %s, which bundle %s neither replaces nor skips: the channel would have two heads; pass --replaces %s", ErrCannotAdd, opts.Channel, b.Package, head, b.Name, head)
		}
	}
	ch.Entries = append(ch.Entries, e)
	slices.SortStableFunc(ch.Entries, func(x, y fbc.ChannelEntry) int { return strings.Compare(x.Name, y.Name) })
	if idx >= 0 {
		np.Channels[idx] = ch
	} else {
		np.Channels = append(np.Channels, ch)
		slices.SortStableFunc(np.Channels, func(x, y *fbc.Channel) int { return strings.Compare(x.Name, y.Name) })
	}
	np.Bundles = append(np.Bundles, b)
	slices.SortStableFunc(np.Bundles, func(x, y *fbc.Bundle) int { return strings.Compare(x.Name, y.Name) })

	next := &fbc.Catalog{Others: cat.Others}
	placed := false
	for _, p := range cat.Packages {
		if p.Name == b.Package {
			next.Packages = append(next.Packages, &np)
			placed = true
		} else {
			next.Packages = append(next.Packages, p)
		}
	}
	if !placed {
		next.Packages = append(next.Packages, &np)
		slices.SortStableFunc(next.Packages, func(x, y *fbc.Package) int { return strings.Compare(x.Name, y.Name) })
	}
	if err := validate.Catalog(next); err != nil {
		return nil, fmt.Errorf("%w: the catalog would not be valid with it: %v", ErrCannotAdd, err)
	}
	*cat = *next
	res.Replaces, res.Skips, res.SkipRange = e.Replaces, e.Skips, e.SkipRange
	if h, err := fbc.NewGraph(ch).Head(); err == nil {
		res.Head = h
	}
	return res, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
