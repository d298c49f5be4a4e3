// Package prune is what its name says, built on the catalog engine of package
// fbc: Filter keeps what an ImageSetConfiguration operator entry asks for of a
// catalog (channel heads, version ranges along the replaces chain, bundles by
// name, full catalogs), with the dependencies it needs (olm.package.required,
// olm.gvk.required) and an Explanation of why each bundle stays; suggestions
// name what a misspelt package, channel or bundle probably meant.
//
// Selection, SelectionOf, VersionRange and SelectsBundle hold the one copy of the
// rules "is this bundle / version / channel in what the configuration asks for",
// used by Filter, by mirror runs (is a selection within an archived one) and by
// delete planning.
//
// It knows nothing about registries, archives, the working directory or how a
// run is orchestrated; it never imports mirror or pipeline.
package prune
