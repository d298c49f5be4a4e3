package prune

import (
	"fmt"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/imageset"
)

// The rules for "is this bundle, version or channel in what the configuration
// asks for", written once: Filter applies them to a catalog, and the mirror runs
// (is a new selection within an archived one?) and delete planning (does a
// delete entry name this bundle?) ask them without one.

// VersionRange is a minVersion/maxVersion pair parsed as semantic versions; a nil
// end is open. Both ends are inclusive.
type VersionRange struct {
	Min, Max *semver.Version
}

// ParseVersionRange parses the minVersion and maxVersion of ib (tolerantly: "v1.2"
// is 1.2.0). It returns every bound that parses, and the first problem: an
// invalid minVersion, an invalid maxVersion, or minVersion above maxVersion.
func ParseVersionRange(ib imageset.IncludeBundle) (VersionRange, error) {
	var r VersionRange
	var first error
	parse := func(field, s string) *semver.Version {
		if s == "" {
			return nil
		}
		v, err := semver.ParseTolerant(s)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("invalid %s %q: %v: use a semantic version such as 1.2.3", field, s, err)
			}
			return nil
		}
		return &v
	}
	r.Min = parse("minVersion", ib.MinVersion)
	r.Max = parse("maxVersion", ib.MaxVersion)
	if first == nil && r.Min != nil && r.Max != nil && r.Min.GT(*r.Max) {
		first = fmt.Errorf("minVersion %s is greater than maxVersion %s: swap them", ib.MinVersion, ib.MaxVersion)
	}
	return r, first
}

// IsSet reports whether the range has a bound.
func (r VersionRange) IsSet() bool { return r.Min != nil || r.Max != nil }

// Contains reports whether v lies within the range.
func (r VersionRange) Contains(v semver.Version) bool {
	if r.Min != nil && v.LT(*r.Min) {
		return false
	}
	if r.Max != nil && v.GT(*r.Max) {
		return false
	}
	return true
}

// Exact reports whether the range is one version (minVersion equal to maxVersion).
func (r VersionRange) Exact() bool {
	return r.Min != nil && r.Max != nil && r.Min.EQ(*r.Max)
}

// String is the range as ">=min <=max" (only the ends that are set).
func (r VersionRange) String() string {
	var parts []string
	if r.Min != nil {
		parts = append(parts, ">="+r.Min.String())
	}
	if r.Max != nil {
		parts = append(parts, "<="+r.Max.String())
	}
	return strings.Join(parts, " ")
}

// Selection is what an operator entry of an ImageSetConfiguration keeps of one
// channel of a package: every bundle, the channel head only, a contiguous part
// of the replaces chain given by a version range, or bundles named one by one
// (and their path to the head). Exactly one of them holds.
type Selection struct {
	All      bool         // every bundle (full: true)
	HeadOnly bool         // only the channel head (no range, no bundle names)
	Range    VersionRange // a range; nil ends are the chain's start and head
	Bundles  []string     // only these bundles (and their path to the head)
}

// SelectionOf is what op keeps of one channel of the package entry p: ch is the
// entry of that channel in p.Channels, or nil when p lists no such channel; p is
// nil for the implicit entry of a configuration without packages. A channel's
// own minVersion/maxVersion replace the package's. The Selection is always
// returned; the error is the first problem of the range that applies (see
// ParseVersionRange), whose unparsable ends are left open.
func SelectionOf(op imageset.Operator, p *imageset.IncludePackage, ch *imageset.IncludeChannel) (Selection, error) {
	if op.Full {
		return Selection{All: true}, nil
	}
	if p == nil {
		return Selection{HeadOnly: true}, nil
	}
	if len(p.SelectedBundles) > 0 {
		var names []string
		for _, b := range p.SelectedBundles {
			names = append(names, b.Name)
		}
		return Selection{Bundles: names}, nil
	}
	ib := p.IncludeBundle
	if ch != nil && ch.HasRange() {
		ib = ch.IncludeBundle
	}
	if !ib.HasRange() {
		return Selection{HeadOnly: true}, nil
	}
	r, err := ParseVersionRange(ib)
	return Selection{Range: r}, err
}

// String says what the selection keeps, for messages.
func (s Selection) String() string {
	lo, hi := s.Range.Min, s.Range.Max
	switch {
	case s.All:
		return "every version"
	case len(s.Bundles) > 0:
		return "bundles " + strings.Join(s.Bundles, ", ")
	case s.HeadOnly:
		return "the channel head only"
	case lo != nil && hi != nil:
		return fmt.Sprintf("versions %s to %s", lo, hi)
	case lo != nil:
		return fmt.Sprintf("versions %s to the channel head", lo)
	case hi != nil:
		return fmt.Sprintf("versions up to %s", hi)
	}
	return "every version"
}

// Contains reports whether s keeps everything want keeps of the same channel,
// comparing the selections themselves (bundle names are not checked: that needs
// the catalog). head is the version of the channel head (nil when unknown).
func (s Selection) Contains(want Selection, head *semver.Version) bool {
	switch {
	case s.All:
		return true
	case want.All:
		return false
	case len(s.Bundles) > 0:
		return len(want.Bundles) > 0
	case len(want.Bundles) > 0:
		return true
	case want.HeadOnly:
		return s.Range.Max == nil
	case s.HeadOnly:
		return head != nil && want.Range.Min != nil && want.Range.Min.GTE(*head) && (want.Range.Max == nil || want.Range.Max.GTE(*head))
	}
	have, w := s.Range, want.Range
	loOK := have.Min == nil || (w.Min != nil && w.Min.GTE(*have.Min))
	hiOK := have.Max == nil || (w.Max != nil && w.Max.LTE(*have.Max))
	return loOK && hiOK
}

// SelectsBundle reports whether the package entry p names a bundle, given its
// name, version and channels, without a catalog: by name when p lists bundles;
// else by channel (when p lists channels) and version (within the channel's and
// the package's minVersion/maxVersion). A bundle whose version does not parse is
// within no range; a bound that does not parse bounds nothing.
func SelectsBundle(p imageset.IncludePackage, name, version string, channels []string) bool {
	if len(p.SelectedBundles) > 0 {
		for _, b := range p.SelectedBundles {
			if b.Name == name {
				return true
			}
		}
		return false
	}
	if len(p.Channels) > 0 {
		for _, ch := range p.Channels {
			for _, c := range channels {
				if c == ch.Name && versionIn(version, ch.IncludeBundle) && versionIn(version, p.IncludeBundle) {
					return true
				}
			}
		}
		return false
	}
	return versionIn(version, p.IncludeBundle)
}

// versionIn reports whether version lies within the range of ib (true when ib
// sets none).
func versionIn(version string, ib imageset.IncludeBundle) bool {
	if !ib.HasRange() {
		return true
	}
	v, err := semver.ParseTolerant(version)
	if err != nil {
		return false
	}
	r, _ := ParseVersionRange(ib)
	return r.Contains(v)
}
