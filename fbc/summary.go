package fbc

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/blang/semver/v4"
)

// Summary is what a catalog holds, at the level Summarize was asked for
// (`airlock list operators`).
type Summary struct {
	// Catalog names the catalog in messages and output.
	Catalog string
	// Packages is set when no package was asked for.
	Packages []PackageSummary
	// Package is set when a package was asked for; Channels then lists its
	// channels (or, with a channel asked for, just that one).
	Package  *PackageSummary
	Channels []ChannelSummary
	// Channel is set when a channel was asked for; Bundles then lists its
	// entries, by version.
	Channel *ChannelSummary
	Bundles []BundleSummary
}

// PackageSummary is one package of a catalog.
type PackageSummary struct {
	Name           string
	DefaultChannel string
}

// ChannelSummary is one channel of a package, with its head (or, if the graph
// has no single head, the error explaining why).
type ChannelSummary struct {
	Name    string
	Head    string
	HeadErr string
}

// BundleSummary is one entry of a channel.
type BundleSummary struct {
	Name     string
	Version  string
	Replaces string
	Head     bool
}

// Summarize lists c's packages with their default channel; with pkgName, that
// package's channels and their heads; with channelName too, the channel's bundles
// by version. name names the catalog in errors and output.
func Summarize(c *Catalog, name, pkgName, channelName string) (*Summary, error) {
	if channelName != "" && pkgName == "" {
		return nil, fmt.Errorf("--channel needs --package")
	}
	cat := c
	out := &Summary{Catalog: name}
	if pkgName == "" {
		for _, p := range cat.Packages {
			if p.Declared == 0 {
				continue
			}
			out.Packages = append(out.Packages, PackageSummary{Name: p.Name, DefaultChannel: p.DefaultChannel})
		}
		return out, nil
	}
	var pkg *Package
	for _, p := range cat.Packages {
		if p.Name == pkgName {
			pkg = p
		}
	}
	if pkg == nil {
		return nil, fmt.Errorf("catalog %s has no package %q: run `airlock list operators --catalog %s` to see its packages", out.Catalog, pkgName, out.Catalog)
	}
	out.Package = &PackageSummary{Name: pkg.Name, DefaultChannel: pkg.DefaultChannel}
	var ch *Channel
	for _, c := range pkg.Channels {
		if channelName != "" && c.Name != channelName {
			continue
		}
		ch = c
		s := ChannelSummary{Name: c.Name}
		if h, err := NewGraph(c).Head(); err != nil {
			s.HeadErr = err.Error()
		} else {
			s.Head = h
		}
		out.Channels = append(out.Channels, s)
	}
	if channelName == "" {
		return out, nil
	}
	if ch == nil {
		return nil, fmt.Errorf("package %q of catalog %s has no channel %q: run `airlock list operators --catalog %s --package %s` to see its channels", pkgName, out.Catalog, channelName, out.Catalog, pkgName)
	}
	bundles := make(map[string]*Bundle, len(pkg.Bundles))
	for _, b := range pkg.Bundles {
		bundles[b.Name] = b
	}
	out.Channel = &out.Channels[0]
	head := out.Channel.Head
	seen := map[string]bool{}
	for _, e := range ch.Entries {
		if seen[e.Name] {
			continue
		}
		seen[e.Name] = true
		s := BundleSummary{Name: e.Name, Replaces: e.Replaces, Head: e.Name == head}
		if b := bundles[e.Name]; b != nil {
			if pv, err := BundlePackageProperty(b); err == nil {
				s.Version = pv.Version
				if pv.Release != "" {
					s.Version += "-" + pv.Release
				}
			}
		}
		out.Bundles = append(out.Bundles, s)
	}
	sort.SliceStable(out.Bundles, func(i, j int) bool {
		vi, ei := semver.ParseTolerant(out.Bundles[i].Version)
		vj, ej := semver.ParseTolerant(out.Bundles[j].Version)
		switch {
		case ei == nil && ej == nil && !vi.EQ(vj):
			return vi.LT(vj)
		case (ei == nil) != (ej == nil):
			return ei == nil
		}
		return out.Bundles[i].Name < out.Bundles[j].Name
	})
	return out, nil
}

// WriteTable writes l as aligned columns.
func (l *Summary) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	switch {
	case l.Package != nil && l.Channel != nil:
		fmt.Fprintf(tw, "PACKAGE\tCHANNEL\tHEAD\n")
		c := *l.Channel
		fmt.Fprintf(tw, "%s\t%s\t%s\n\n", l.Package.Name, c.Name, headText(c))
		fmt.Fprintf(tw, "BUNDLE\tVERSION\tREPLACES\n")
		for _, b := range l.Bundles {
			name := b.Name
			if b.Head {
				name += " (head)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, dash(b.Version), dash(b.Replaces))
		}
	case l.Package != nil:
		fmt.Fprintf(tw, "PACKAGE\tDEFAULT CHANNEL\n%s\t%s\n\n", l.Package.Name, dash(l.Package.DefaultChannel))
		fmt.Fprintf(tw, "CHANNEL\tHEAD\n")
		for _, c := range l.Channels {
			fmt.Fprintf(tw, "%s\t%s\n", c.Name, headText(c))
		}
	default:
		fmt.Fprintf(tw, "NAME\tDEFAULT CHANNEL\n")
		for _, p := range l.Packages {
			fmt.Fprintf(tw, "%s\t%s\n", p.Name, dash(p.DefaultChannel))
		}
	}
	return tw.Flush()
}

func headText(c ChannelSummary) string {
	if c.HeadErr != "" {
		return "(" + c.HeadErr + ")"
	}
	return c.Head
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// CatalogCounts counts the documents of a catalog.
type CatalogCounts struct {
	Packages int `json:"packages"`
	Channels int `json:"channels"`
	Bundles  int `json:"bundles"`
}

// CountCatalog counts the packages, channels and bundles of c (duplicates
// included).
func CountCatalog(c *Catalog) CatalogCounts {
	var n CatalogCounts
	if c == nil {
		return n
	}
	n.Packages = len(c.Packages)
	for _, p := range c.Packages {
		n.Channels += len(p.Channels)
		n.Bundles += len(p.Bundles)
	}
	return n
}
