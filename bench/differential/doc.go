// Package differential compares airlock's release selection with oc-mirror
// v2's on the same update graphs: every channel configuration of
// release/graph's Choose goldens is given to both, against the same test
// update service (cincinnatitest) and a local signature store, and the
// versions each would mirror are compared.
//
// The comparison is a test behind the build tag "differential", so that
// `make test` never runs it; `make differential` does, and skips with a
// message when no oc-mirror binary is built (scripts/build-oc-mirror.sh).
// docs/releases.md records the table and explains each difference.
package differential
