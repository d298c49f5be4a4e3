package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
)

// Disk-to-mirror has only the archived (pruned) catalog, not the source catalog,
// so it cannot tell which bundles a wider selection would add. It compares the
// selections themselves: what the configuration asks for must lie within what the
// configuration that made the archive asked for, package by package and channel
// by channel. Anything it cannot prove to be inside is reported as missing.

// span is the part of a channel's replaces chain a selection keeps.
type span struct {
	all      bool            // every bundle (full)
	headOnly bool            // only the channel head (no range)
	lo, hi   *semver.Version // a range; nil ends are the chain's start and head
	bundles  []string        // only these bundles (and their path to the head)
}

func (s span) String() string {
	switch {
	case s.all:
		return "every version"
	case len(s.bundles) > 0:
		return "bundles " + strings.Join(s.bundles, ", ")
	case s.headOnly:
		return "the channel head only"
	case s.lo != nil && s.hi != nil:
		return fmt.Sprintf("versions %s to %s", s.lo, s.hi)
	case s.lo != nil:
		return fmt.Sprintf("versions %s to the channel head", s.lo)
	case s.hi != nil:
		return fmt.Sprintf("versions up to %s", s.hi)
	}
	return "every version"
}

// contains reports whether have keeps everything want keeps; headV is the version
// of the channel head in the archived catalog (nil when unknown).
func (have span) contains(want span, headV *semver.Version) bool {
	switch {
	case have.all:
		return true
	case want.all:
		return false
	case len(have.bundles) > 0:
		return len(want.bundles) > 0 // names are checked against the archived catalog
	case len(want.bundles) > 0:
		return true // names are checked against the archived catalog
	case want.headOnly:
		return have.hi == nil
	case have.headOnly:
		return headV != nil && want.lo != nil && want.lo.GTE(*headV) && (want.hi == nil || want.hi.GTE(*headV))
	}
	loOK := have.lo == nil || (want.lo != nil && want.lo.GTE(*have.lo))
	hiOK := have.hi == nil || (want.hi != nil && want.hi.LTE(*have.hi))
	return loOK && hiOK
}

func parseVersion(s string) *semver.Version {
	if s == "" {
		return nil
	}
	v, err := semver.ParseTolerant(s)
	if err != nil {
		return nil
	}
	return &v
}

// spanOf is what an operator entry keeps of one channel of package p (nil p: the
// implicit entry of a configuration without packages).
func spanOf(op imageset.Operator, p *imageset.IncludePackage, ch *imageset.IncludeChannel) span {
	if op.Full {
		return span{all: true}
	}
	if p == nil {
		return span{headOnly: true}
	}
	if len(p.SelectedBundles) > 0 {
		var names []string
		for _, b := range p.SelectedBundles {
			names = append(names, b.Name)
		}
		return span{bundles: names}
	}
	ib := p.IncludeBundle
	if ch != nil && (ch.MinVersion != "" || ch.MaxVersion != "") {
		ib = ch.IncludeBundle
	}
	if ib.MinVersion == "" && ib.MaxVersion == "" {
		return span{headOnly: true}
	}
	return span{lo: parseVersion(ib.MinVersion), hi: parseVersion(ib.MaxVersion)}
}

func findPackage(op imageset.Operator, name string) *imageset.IncludePackage {
	for i := range op.Packages {
		if op.Packages[i].Name == name {
			return &op.Packages[i]
		}
	}
	return nil
}

func findChannel(p *imageset.IncludePackage, name string) *imageset.IncludeChannel {
	for i := range p.Channels {
		if p.Channels[i].Name == name {
			return &p.Channels[i]
		}
	}
	return nil
}

// headVersion is the version of the head of channel ch of package pkg in cat.
func headVersion(cat *fbc.Catalog, pkg, ch string) *semver.Version {
	for _, p := range cat.Packages {
		if p.Name != pkg {
			continue
		}
		for _, c := range p.Channels {
			if c.Name != ch {
				continue
			}
			head, err := fbc.NewGraph(c).Head()
			if err != nil {
				return nil
			}
			for _, b := range p.Bundles {
				if b.Name == head {
					if v, err := fbc.BundleVersion(b); err == nil {
						return &v
					}
				}
			}
		}
	}
	return nil
}

// selectionGap lists what asked selects from a catalog that archived (the entry
// that made the archived catalog cat) did not: an empty list means asked is the
// same selection or a narrower one.
func selectionGap(asked, archived imageset.Operator, cat *fbc.Catalog) []string {
	if filterHash(asked) == filterHash(archived) || (archived.Full && len(archived.Packages) == 0) {
		return nil
	}
	where := "catalog " + asked.Catalog
	var gaps []string
	gap := func(format string, args ...any) { gaps = append(gaps, where+": "+fmt.Sprintf(format, args...)) }
	if !asked.SkipDependencies && archived.SkipDependencies {
		gap("the dependencies of the selected packages (the archive was made with skipDependencies: true)")
	}
	archivedPkgs := map[string]*fbc.Package{}
	var names []string
	for _, p := range cat.Packages {
		archivedPkgs[p.Name] = p
		names = append(names, p.Name)
	}
	if len(asked.Packages) == 0 {
		if asked.Full {
			gap("every bundle of every package (full: true); the archive holds a pruned catalog")
			return gaps
		}
		if len(archived.Packages) > 0 {
			gap("every package (no packages listed); the archive holds only %s", strings.Join(names, ", "))
			return gaps
		}
	}
	// The packages to check: those asked for, or (no packages) every package.
	askedPkgs := asked.Packages
	if len(askedPkgs) == 0 {
		for _, n := range names {
			askedPkgs = append(askedPkgs, imageset.IncludePackage{Name: n})
		}
	}
	for i := range askedPkgs {
		ap := &askedPkgs[i]
		if len(asked.Packages) == 0 {
			ap = nil
		}
		name := askedPkgs[i].Name
		cp := archivedPkgs[name]
		hp := findPackage(archived, name)
		if cp == nil || (hp == nil && len(archived.Packages) > 0) {
			gap("package %s (not in the archive's selection)", name)
			continue
		}
		if ap != nil && asked.Full && !archived.Full {
			gap("package %s: every version (full: true); the archive holds a pruned selection", name)
			continue
		}
		if ap != nil && len(ap.SelectedBundles) > 0 {
			have := map[string]bool{}
			for _, b := range cp.Bundles {
				have[b.Name] = true
			}
			for _, b := range ap.SelectedBundles {
				if !have[b.Name] {
					gap("package %s: bundle %s (not in the archive)", name, b.Name)
				}
			}
			if hp != nil && len(hp.SelectedBundles) > 0 {
				continue
			}
		}
		// The channels asked for: those listed, else every channel of the package.
		var chans []string
		if ap != nil && len(ap.Channels) > 0 {
			for _, c := range ap.Channels {
				chans = append(chans, c.Name)
			}
		} else {
			if hp != nil && len(hp.Channels) > 0 && !archived.Full {
				var hc []string
				for _, c := range hp.Channels {
					hc = append(hc, c.Name)
				}
				gap("package %s: every channel; the archive holds channels %s", name, strings.Join(hc, ", "))
				continue
			}
			for _, c := range cp.Channels {
				chans = append(chans, c.Name)
			}
		}
		for _, ch := range chans {
			var ac, hc *imageset.IncludeChannel
			if ap != nil {
				ac = findChannel(ap, ch)
			}
			if hp != nil && len(hp.Channels) > 0 {
				if hc = findChannel(hp, ch); hc == nil && !archived.Full {
					gap("package %s: channel %s (the archive holds channels %s)", name, ch, strings.Join(channelNames(hp), ", "))
					continue
				}
			}
			if !slices.ContainsFunc(cp.Channels, func(c *fbc.Channel) bool { return c.Name == ch }) {
				gap("package %s: channel %s (not in the archived catalog)", name, ch)
				continue
			}
			want, have := spanOf(asked, ap, ac), spanOf(archived, hp, hc)
			if !have.contains(want, headVersion(cat, name, ch)) {
				gap("package %s channel %s: %s; the archive holds %s", name, ch, want, have)
			}
		}
	}
	return gaps
}

func channelNames(p *imageset.IncludePackage) []string {
	var out []string
	for _, c := range p.Channels {
		out = append(out, c.Name)
	}
	return out
}
