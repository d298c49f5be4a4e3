package prune

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

// SelectionGaps lists what asked selects from a catalog that archived (the entry
// that made the archived catalog cat) did not, one message per gap: an empty list
// means asked is a narrower selection. Callers compare the two entries first:
// identical entries need no catalog.
func SelectionGaps(asked, archived imageset.Operator, cat *fbc.Catalog) []string {
	if archived.Full && len(archived.Packages) == 0 {
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
			want, _ := SelectionOf(asked, ap, ac)
			have, _ := SelectionOf(archived, hp, hc)
			if !have.Contains(want, headVersion(cat, name, ch)) {
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
