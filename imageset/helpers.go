package imageset

import (
	"fmt"
	"regexp"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/location"
)

// ArchiveSizeBytes is the maximum size of one archive chunk in bytes:
// archiveSize GiB, or DefaultArchiveSizeGiB (500 GiB) when archiveSize is 0 or negative.
func (c *ImageSetConfiguration) ArchiveSizeBytes() int64 {
	n := int64(c.ArchiveSize)
	if n <= 0 {
		n = DefaultArchiveSizeGiB
	}
	if n > MaxArchiveSizeGiB {
		n = MaxArchiveSizeGiB
	}
	return n << 30
}

// BlockedPatterns compiles mirror.blockedImages (Go regular expressions, in order).
// It cannot fail on a configuration returned by Load.
func (c *ImageSetConfiguration) BlockedPatterns() ([]*regexp.Regexp, error) {
	return compilePatterns(c.Mirror.BlockedImages, "mirror")
}

// BlockedPatterns compiles delete.blockedImages (Go regular expressions, in order).
func (c *DeleteImageSetConfiguration) BlockedPatterns() ([]*regexp.Regexp, error) {
	return compilePatterns(c.Delete.BlockedImages, "delete")
}

func compilePatterns(images []Image, prefix string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(images))
	for i, im := range images {
		re, err := regexp.Compile(im.Name)
		if err != nil {
			return nil, fmt.Errorf("%s.blockedImages[%d].name: %w", prefix, i, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// HasRange reports whether minVersion or maxVersion is set.
func (b IncludeBundle) HasRange() bool { return b.MinVersion != "" || b.MaxVersion != "" }

// Bounds parses minVersion and maxVersion; an unset bound is nil. It cannot fail on a
// configuration returned by Load. Both bounds are inclusive.
func (b IncludeBundle) Bounds() (lo, hi *semver.Version, err error) {
	if b.MinVersion != "" {
		v, err := semver.Parse(b.MinVersion)
		if err != nil {
			return nil, nil, fmt.Errorf("minVersion %q: %w", b.MinVersion, err)
		}
		lo = &v
	}
	if b.MaxVersion != "" {
		v, err := semver.Parse(b.MaxVersion)
		if err != nil {
			return nil, nil, fmt.Errorf("maxVersion %q: %w", b.MaxVersion, err)
		}
		hi = &v
	}
	return lo, hi, nil
}

// Contains reports whether version v is within the range (true when no bound is set).
// Bounds that do not parse are ignored (Load never returns such a configuration).
func (b IncludeBundle) Contains(v semver.Version) bool {
	lo, hi, _ := b.Bounds()
	return (lo == nil || v.GTE(*lo)) && (hi == nil || v.LTE(*hi))
}

// HasRange reports whether the package or any of its channels sets minVersion/maxVersion.
func (p IncludePackage) HasRange() bool {
	if p.IncludeBundle.HasRange() {
		return true
	}
	for _, ch := range p.Channels {
		if ch.HasRange() {
			return true
		}
	}
	return false
}

// HasRange reports whether any package of the catalog (or any of their channels) sets a
// version range.
func (o Operator) HasRange() bool {
	for _, p := range o.Packages {
		if p.HasRange() {
			return true
		}
	}
	return false
}

// IsOCI reports whether the catalog is an OCI layout on disk (oci://PATH).
func (o Operator) IsOCI() bool { return location.IsLayout(o.Catalog) }

// OCIPath is the directory of an oci:// catalog ("" for a registry catalog).
func (o Operator) OCIPath() string {
	p, _ := location.CutLayout(o.Catalog)
	return p
}

// CatalogRef is the registry reference of the catalog without an optional docker://
// prefix ("" for an oci:// catalog).
func (o Operator) CatalogRef() string {
	if o.IsOCI() {
		return ""
	}
	return location.ImageRef(o.Catalog)
}

// SourceImages lists the registry references the configuration pulls from:
// its catalogs (except oci:// ones) and additionalImages, with their lines.
func (c *ImageSetConfiguration) SourceImages() []Image {
	var out []Image
	for _, o := range c.Mirror.Operators {
		if !o.IsOCI() {
			out = append(out, Image{Name: o.Catalog, Line: o.Line})
		}
	}
	return append(out, c.Mirror.AdditionalImages...)
}

// IsFullCatalog reports whether the catalog is taken as is: full: true and no packages
// (no filtering and no rebuild).
func (o Operator) IsFullCatalog() bool { return o.Full && len(o.Packages) == 0 }

// Ref is the image reference of an additional image without an optional docker:// prefix.
func (i Image) Ref() string { return location.ImageRef(i.Name) }
