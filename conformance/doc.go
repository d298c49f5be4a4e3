// Package conformance holds differential tests of airlock's file-based catalog
// engine (package prune) against opm's own library, operator-registry, which is
// the reference implementation. It is a separate Go module so that the main
// module never depends on operator-registry. See docs/conformance.md.
package conformance
