// Package signature finds what is attached to an image so that it crosses the
// air gap with it: cosign's tag-scheme attachments ("sha256-<hex>.sig", ".att",
// ".sbom" in the image's repository) and OCI 1.1 referrers (the referrers API,
// or the "sha256-<hex>" fallback index where a registry lacks the API),
// recursively (the signature of an SBOM). It also keeps a destination's
// referrers findable where the destination has no referrers API (the fallback
// index), and owns the --signatures mode.
//
// It works through the endpoint interfaces only (Source, Destination, and the
// optional Referrers and TagLister), so it knows no registry client, no plan,
// no archive and no catalog.
package signature
