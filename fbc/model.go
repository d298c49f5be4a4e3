// Package fbc is airlock's file-based catalog (FBC) engine: the model (packages,
// channels, bundles, deprecations and every other schema as an opaque blob), loading
// from an fs.FS (JSON streams, YAML multi-doc, .indexignore), deterministic writing,
// the decoding of property values as opm decodes them (PropertyChecker), the
// channel graph (heads, replaces, skips, skipRange), the images a catalog needs
// (Images) and its Summary. The rules of `opm validate` are in fbc/validate,
// which builds on fbc; fbc never imports it.
//
// It knows nothing about registries, archives or what a configuration selects:
// package prune builds the filter on it, and fbc never imports prune. Its byte-level
// JSON/YAML scanners are in fbc/internal/scan; fbc/legacy converts SQLite and
// package-manifest catalogs into it.
package fbc

import (
	"encoding/json"
)

// Schema names of the documents OLM defines.
const (
	SchemaPackage      = "olm.package"
	SchemaChannel      = "olm.channel"
	SchemaBundle       = "olm.bundle"
	SchemaDeprecations = "olm.deprecations"
)

// Property types with a meaning for airlock.
const (
	PropertyPackage         = "olm.package"
	PropertyGVK             = "olm.gvk"
	PropertyPackageRequired = "olm.package.required"
	PropertyGVKRequired     = "olm.gvk.required"
	PropertyBundleObject    = "olm.bundle.object"
	PropertyCSVMetadata     = "olm.csv.metadata"
	PropertyDeprecated      = "olm.deprecated"
)

// Catalog is a whole file-based catalog. Packages are sorted by name once loaded.
type Catalog struct {
	Packages []*Package
	// Others are blobs of unknown schemas that name no package; they are kept verbatim.
	Others []*Meta
}

// Package is an olm.package document together with everything that belongs to it.
type Package struct {
	Name           string
	DefaultChannel string
	Icon           *Icon
	Description    string
	Properties     []Property

	// Channels are sorted by name once loaded.
	Channels []*Channel
	// Bundles are sorted by name once loaded.
	Bundles []*Bundle
	// Deprecations are the package's olm.deprecations documents (a valid catalog has
	// at most one).
	Deprecations []*Deprecations
	// Others are blobs of unknown schemas whose "package" is this package, in
	// stable order by schema.
	Others []*Meta

	// Declared is the number of olm.package documents with this name: 0 when only
	// channels, bundles or other documents name the package, more than 1 for
	// duplicates. Load keeps everything it reads, so validate.Catalog can report it.
	Declared int

	// Origin says where the (first) olm.package document was read from.
	Origin Origin
}

// Icon is a package icon.
type Icon struct {
	Data      []byte `json:"base64data"`
	MediaType string `json:"mediatype"`
}

// Channel is an olm.channel document.
type Channel struct {
	Name       string
	Package    string
	Entries    []ChannelEntry
	Properties []Property
	Origin     Origin
}

// ChannelEntry is one entry of a channel: a bundle name and its upgrade edges.
type ChannelEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

// Bundle is an olm.bundle document.
type Bundle struct {
	Name          string
	Package       string
	Image         string
	Properties    []Property
	RelatedImages []RelatedImage
	Origin        Origin

	// src is the file the bundle was loaded from; Write re-reads the document
	// from it to restore elided property values (see LoadOptions.ElideHeavy).
	src *docSource
	// elided holds the indexes of Properties whose values Load elided.
	elided []int32
	// propErrs are the problems Load found in the values it elided, by
	// increasing index; validate.Catalog reports them.
	propErrs []propertyError
	// written, when set, gives the properties Write and Render write (see
	// WriteProperties).
	written func() ([]Property, error)
}

// WriteProperties makes Write and Render write the properties that load returns
// (called once per write, one bundle at a time) in place of b.Properties: a
// model whose bundles hold only their light properties for filtering and
// validation (no manifests) gets the full ones only when it is written, so that
// one bundle's manifests are in memory at a time. load must return
// b.Properties with the heavy values (olm.bundle.object, olm.csv.metadata)
// added; copies of b share it.
func (b *Bundle) WriteProperties(load func() ([]Property, error)) { b.written = load }

// RelatedImage is one relatedImages entry of a bundle.
type RelatedImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// Property is a typed property. Value is the raw JSON value, kept verbatim. When a
// catalog is loaded with heavy values elided (see LoadOptions), the values of large
// properties (olm.bundle.object, olm.csv.metadata) may be nil; Write restores them
// from the source document.
type Property struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// Deprecations is an olm.deprecations document.
type Deprecations struct {
	Package string             `json:"package"`
	Entries []DeprecationEntry `json:"entries"`
	Origin  Origin             `json:"-"`
}

// DeprecationEntry deprecates a package, a channel or a bundle.
type DeprecationEntry struct {
	Reference PackageScopedReference `json:"reference"`
	Message   string                 `json:"message"`
}

// PackageScopedReference names the deprecated object.
type PackageScopedReference struct {
	Schema string `json:"schema"`
	Name   string `json:"name,omitempty"`
}

// Meta is a document of any schema airlock does not model. Blob is the document,
// kept verbatim (compact JSON).
type Meta struct {
	Schema  string
	Package string
	Name    string
	Blob    json.RawMessage
	Origin  Origin
}

// Origin locates a document in the catalog it was loaded from, for error messages
// and for restoring elided property values. Offset and Length are byte positions
// of the document in File for JSON streams; Index is the 0-based document index.
type Origin struct {
	File   string
	Index  int
	Offset int64
	Length int64
}
