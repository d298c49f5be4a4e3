// Package transfer is the copy engine and its dry-run estimate. Copy moves
// images (Jobs) from an endpoint.Source to an endpoint.Destination: one transfer
// per blob digest per run, bounded concurrency per registry, every blob verified
// against its digest before it is committed, manifests pushed only after their
// blobs, retries under the one retry policy, and one failure never cancelling
// the rest; a re-run after an interruption copies only what is missing.
// Prefetch starts the blobs of images while their plan is still being made,
// and Copy of the final plan continues with its engine.
// EstimatePlan, Estimator and Measure answer what a copy would move without
// moving it.
//
// It sees registries, layouts and archives only through the endpoint
// interfaces: it must not import the registry client, the layout or archive
// packages, plans or catalogs.
package transfer
