// Package catalogimage fetches, extracts and rebuilds operator catalog images.
// Fetch resolves a catalog (or bundle, FetchBundle) image from a registry or an
// OCI layout, copies it into a layout with the copy engine and extracts its
// file-based catalog (layers read top-down, whiteouts honoured, limits against
// hostile layers), streaming the layer while it downloads; the gzip inflater
// (ISA-L with the isal and cgo build tags, klauspost otherwise) lives here only.
// Rebuild writes the original image plus one deterministic layer with a pruned
// catalog into an OCI layout.
//
// It knows the image side of a catalog (labels, /configs, the cache), never
// the file-based catalog's fields: it must not import prune, fbc, pipeline or
// the plan (package mirror).
package catalogimage
