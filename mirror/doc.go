// Package mirror plans image copies: it resolves every reference to a digest
// (through a Resolver), maps each source to its destination (DestRef,
// ImageDestination, CatalogDestination, DestinationRepo, --max-nested-paths),
// knows the workflows (mirror-to-mirror, mirror-to-disk, disk-to-mirror), splits
// a plan into shards, and routes reads between registries and OCI layouts
// (SourceMux). The plan is the only place that knows the workflow.
//
// The work is done by its sub-packages, which never import it:
//   - oci: media types, manifest parsing, the verifier, image references;
//   - endpoint: the Source and Destination interfaces every endpoint implements;
//   - retry: the one retry policy and its status errors;
//   - adaptive: the one adaptive concurrency limit per host;
//   - registry: the one registry client (auth, TLS, registries.conf, probing, unreachable hosts);
//   - layout: OCI image layouts, and the binary image;
//   - archive: the chunked archive of mirror-to-disk (and its shards);
//   - transfer: the copy engine and the dry-run estimate;
//   - catalogimage: catalog image fetch, extract, inflate and rebuild;
//   - signature: signatures, attestations, SBOMs and referrers carried with their images;
//   - sigpolicy: a containers-policy.json (--policy) judging each source image.
//
// It knows nothing about file-based catalog fields beyond a list of images, and
// never imports prune, fbc or pipeline.
package mirror
