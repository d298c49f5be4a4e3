// Package validate owns the rules of `opm validate` for file-based catalogs:
// Catalog checks a loaded fbc.Catalog against every rule of the newest opm's
// model conversion and model validation (packages, channels, bundles, versions
// and releases, image references, the channel graph, deprecations) and reports
// every problem at once, sorted, in opm's wording (*ValidationError, Problem);
// Dir loads a catalog folder and validates it.
//
// airlock is stricter than `opm validate` where opm would accept a catalog that
// `opm serve` then cannot serve: the names of custom schemas and of the packages
// of custom blobs must be valid cache keys, and a bundle has at most one
// olm.csv.metadata property. A catalog that passes Catalog is one opm both
// validates and serves.
//
// It builds on package fbc (the model, Load, the channel graph and the decoding
// of property values, fbc.PropertyChecker) and fbc never imports it. It must not
// know about registries, image configurations or pruning: it judges a catalog,
// it does not fetch, select or change one.
package validate
