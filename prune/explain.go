package prune

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ReasonKind says why Filter kept a bundle.
type ReasonKind string

// Reasons a bundle is kept.
const (
	// ReasonRequested: the configuration asked for the bundle (in a version range,
	// named in packages[].bundles, or full).
	ReasonRequested ReasonKind = "requested"
	// ReasonHead: the bundle is the head of a kept channel (heads-only selection,
	// or the head a package needs to stay valid).
	ReasonHead ReasonKind = "channel head"
	// ReasonContinuity: the bundle lies on the upgrade path between the channel head
	// and a bundle kept for another reason, so the channel keeps a single head.
	ReasonContinuity ReasonKind = "continuity"
	// ReasonDependency: another kept bundle requires it (olm.package.required or
	// olm.gvk.required).
	ReasonDependency ReasonKind = "dependency"
)

// Reason is one reason a bundle is kept, in one channel.
type Reason struct {
	Kind    ReasonKind `json:"kind"`
	Channel string     `json:"channel"`
	// Detail is a human-readable precision: the version range, the requiring bundle
	// and its requirement, ...
	Detail string `json:"detail,omitempty"`
}

// String renders the reason as one phrase.
func (r Reason) String() string {
	var b strings.Builder
	switch r.Kind {
	case ReasonContinuity:
		b.WriteString("continuity")
	default:
		b.WriteString(string(r.Kind))
	}
	if r.Detail != "" {
		b.WriteString(" (")
		b.WriteString(r.Detail)
		b.WriteString(")")
	}
	if r.Channel != "" {
		b.WriteString(" in ")
		b.WriteString(r.Channel)
	}
	return b.String()
}

// Explanation says, per package, which bundles Filter kept and why, which channels
// it dropped, and what it could not resolve.
type Explanation struct {
	Packages []PackageExplanation `json:"packages"`
	// Warnings are problems that did not stop filtering (unsatisfied dependencies,
	// unparsable requirements).
	Warnings []string `json:"warnings,omitempty"`
}

// PackageExplanation explains one kept package.
type PackageExplanation struct {
	Name           string `json:"name"`
	DefaultChannel string `json:"defaultChannel"`
	// Dependency is true when the configuration did not select the package and it
	// was added only to satisfy dependencies.
	Dependency bool                 `json:"dependency,omitempty"`
	Channels   []ChannelExplanation `json:"channels"`
	Bundles    []BundleExplanation  `json:"bundles"`
	Dropped    []DroppedChannel     `json:"droppedChannels,omitempty"`
}

// ChannelExplanation lists the entries kept in one channel, in catalog order.
type ChannelExplanation struct {
	Name    string   `json:"name"`
	Entries []string `json:"entries"`
}

// BundleExplanation gives the reasons one bundle was kept.
type BundleExplanation struct {
	Name    string   `json:"name"`
	Version string   `json:"version,omitempty"`
	Reasons []Reason `json:"reasons"`
}

// DroppedChannel is a channel of a selected package that the filter left out
// although it was asked for (for example a version range matched none of its
// bundles).
type DroppedChannel struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Package returns the explanation of the package named name, or nil.
func (e *Explanation) Package(name string) *PackageExplanation {
	if e == nil {
		return nil
	}
	i := sort.Search(len(e.Packages), func(i int) bool { return e.Packages[i].Name >= name })
	if i < len(e.Packages) && e.Packages[i].Name == name {
		return &e.Packages[i]
	}
	return nil
}

// Bundle returns the explanation of the bundle named name, or nil.
func (p *PackageExplanation) Bundle(name string) *BundleExplanation {
	if p == nil {
		return nil
	}
	for i := range p.Bundles {
		if p.Bundles[i].Name == name {
			return &p.Bundles[i]
		}
	}
	return nil
}

// Counts returns the number of kept packages, channels and bundles.
func (e *Explanation) Counts() (packages, channels, bundles int) {
	if e == nil {
		return 0, 0, 0
	}
	for _, p := range e.Packages {
		channels += len(p.Channels)
		bundles += len(p.Bundles)
	}
	return len(e.Packages), channels, bundles
}

// WriteText writes the explanation for humans (airlock catalog prune --explain):
//
//	package foo (default channel stable)
//	  channel stable: foo.v2.0.0 foo.v1.1.0
//	    foo.v2.0.0  2.0.0  channel head in stable
//	    foo.v1.1.0  1.1.0  requested (in range >=1.1.0) in stable
//	  dropped channel beta: no bundle in range >=1.1.0
func (e *Explanation) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if e != nil {
		for _, p := range e.Packages {
			fmt.Fprintf(bw, "package %s (default channel %s)", p.Name, p.DefaultChannel)
			if p.Dependency {
				bw.WriteString(" [added as a dependency]")
			}
			bw.WriteString("\n")
			for _, c := range p.Channels {
				fmt.Fprintf(bw, "  channel %s: %s\n", c.Name, strings.Join(c.Entries, " "))
			}
			nameW, verW := 0, 0
			for _, b := range p.Bundles {
				nameW = max(nameW, len(b.Name))
				verW = max(verW, len(b.Version))
			}
			for _, b := range p.Bundles {
				ver := b.Version
				if ver == "" {
					ver = "-"
				}
				reasons := make([]string, len(b.Reasons))
				for i, r := range b.Reasons {
					reasons[i] = r.String()
				}
				fmt.Fprintf(bw, "    %-*s  %-*s  %s\n", nameW, b.Name, verW, ver, strings.Join(reasons, "; "))
			}
			for _, d := range p.Dropped {
				fmt.Fprintf(bw, "  dropped channel %s: %s\n", d.Name, d.Reason)
			}
		}
		if len(e.Warnings) > 0 {
			bw.WriteString("warnings:\n")
			for _, wmsg := range e.Warnings {
				fmt.Fprintf(bw, "  - %s\n", wmsg)
			}
		}
	}
	return bw.Flush()
}
