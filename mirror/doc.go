// Package mirror plans and executes image copies: references and destination naming,
// the plan, the copy engine (blob de-duplication, bounded concurrency, retries,
// resume), registry, OCI-layout and archive endpoints, catalog image fetch and rebuild,
// auth and TLS. It knows nothing about file-based catalog fields beyond a list of images.
package mirror
