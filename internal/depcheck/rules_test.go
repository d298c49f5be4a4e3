package depcheck

import "slices"

// product lists the small leaves any layer may use: the one location type
// (docker://, file://, oci://) and the helpers under internal/. They know
// nothing of catalogs, registries or the pipeline.
var product = []string{"location", "internal/atomicfile", "internal/humanize", "internal/browser", "internal/redact", "internal/jsonindent"}

func with(extra ...string) []string { return append(slices.Clone(product), extra...) }

// rules is the architecture of docs/architecture.md as a table: for each
// package, what it may import from this module in its non-test files. Imports
// point one way: cmd -> pipeline -> {workspace, report, manifests, kube,
// mirror...} -> prune -> fbc; mirror never imports prune or fbc, fbc never
// imports prune, nothing imports cmd, only cmd imports pipeline. A package no
// rule names fails TestLayering: a new package is placed on purpose.
var rules = []rule{
	// The command line and the orchestration above everything else.
	{"cmd/...", []string{anyProduct}},
	// The orchestrator wires the engines to the plan through their public
	// verbs: the catalog engine (fbc, its legacy formats and validation,
	// prune), the image side (mirror and its packages), the records and the
	// outputs. Not below them: no adaptive limits, scanners or test support.
	{"pipeline", with("imageset", "helm", "fbc", "fbc/legacy", "fbc/validate", "prune", "prune/graph", "report", "manifests", "workspace",
		"mirror", "mirror/archive", "mirror/catalogimage", "mirror/endpoint", "mirror/layout", "mirror/oci", "mirror/registry",
		"mirror/retry", "mirror/signature", "mirror/sigpolicy", "mirror/transfer", "pipeline/deletion",
		"release/graph", "release/graphimage", "release/payload", "release/signature")},
	// airlock delete: planned from the history, executed against one registry.
	// airlock kube job / image: a sharded plan as Kubernetes manifests, the binary as an image.
	{"pipeline/kubejob", with("kube", "imageset", "mirror", "mirror/layout", "mirror/oci", "mirror/registry", "mirror/retry", "mirror/transfer", "internal/humanize")},
	{"pipeline/deletion", with("workspace", "manifests", "mirror", "mirror/registry", "mirror/retry", "mirror/endpoint", "mirror/oci", "prune", "imageset")},
	// The seeding behind `airlock registry seed` and the demo: pushes catalogs
	// and images, so it sits beside pipeline, never using it.
	{"internal/seed", with("fbc", "mirror/catalogimage", "mirror/registry", "mirror/oci", "internal/fakeimage", "internal/sqliteindex")},

	// Records and outputs of a run.
	{"workspace", with("mirror", "mirror/archive", "mirror/oci", "mirror/transfer", "imageset")},
	{"report", with("prune", "fbc", "imageset")},
	{"manifests", with("mirror/oci")},
	{"kube", with()},

	// Images: the plan on top, then the catalog image, the engine, the
	// endpoints, the vocabulary. No FBC, no configuration.
	{"mirror", with("mirror/catalogimage", "mirror/transfer", "mirror/layout", "mirror/registry", "mirror/signature", "mirror/retry", "mirror/endpoint", "mirror/oci")},
	// Attachments (signatures, SBOMs, referrers): found and kept findable
	// through the endpoint interfaces only.
	{"mirror/signature", with("mirror/retry", "mirror/endpoint", "mirror/oci")},
	// The signature policy (--policy): containers/image's evaluation, given
	// repositories and digests; no plan, no other package of airlock.
	{"mirror/sigpolicy", with("mirror/oci")},
	{"mirror/catalogimage", with("mirror/registry", "mirror/layout", "mirror/transfer", "mirror/retry", "mirror/endpoint", "mirror/oci")},
	{"mirror/archive", with("mirror/endpoint", "mirror/oci")},
	{"mirror/transfer", with("mirror/adaptive", "mirror/retry", "mirror/endpoint", "mirror/oci")},
	{"mirror/registry", with("mirror/adaptive", "mirror/retry", "mirror/endpoint", "mirror/oci")},
	// The adaptive concurrency limit per host: no HTTP, no registry, no engine.
	{"mirror/adaptive", nil},
	{"mirror/layout", with("mirror/endpoint", "mirror/oci")},
	{"mirror/retry", with("mirror/endpoint", "mirror/oci")},
	{"mirror/endpoint", with("mirror/oci")},
	{"mirror/oci", with()},

	// Catalogs: selection on top of the engine; the engine knows no registry
	// and no configuration.
	{"prune/graph", with("prune", "fbc", "imageset", "internal/dotrender")},
	{"prune", with("fbc", "fbc/validate", "imageset")},
	{"fbc/validate", with("fbc", "fbc/internal/scan")},
	{"fbc/legacy", with("fbc", "fbc/validate", "fbc/internal/scan")},
	{"fbc", with("fbc/internal/scan")},
	{"fbc/internal/scan", nil},
	// Release signatures: fetched over HTTP under the one retry policy,
	// verified with OpenPGP; no copying, no plan, no registry.
	{"release/signature", with("mirror/retry", "mirror/endpoint")},
	{"imageset", []string{"location", "internal/redact"}},
	// Helm charts: repositories, rendering, image discovery, artifacts; no
	// registry, no copying, no configuration.
	{"helm", with("mirror/retry", "mirror/endpoint")},
	// OpenShift releases: update graphs and version selection; no registry,
	// no copying (the retry policy and its typed HTTP error only).
	{"release/graph", with("imageset", "mirror/retry", "mirror/endpoint", "internal/dotrender")},

	// The graph-data image: the tarball read under the retry policy, checked;
	// the image is built by mirror/catalogimage, through the pipeline.
	{"release/graphimage", with("mirror/retry", "mirror/endpoint", "internal/redact")},

	// Releases: the payload reader knows no registry, copying or workflow.
	{"release/payload", with()},

	// Product helpers. location is the one location type, below everything.
	{"location", nil},
	{"internal/sqliteindex", with("fbc")},
	{"internal/registryserver", with()},
	{"internal/fakeimage", nil},
	{"internal/atomicfile", nil},
	{"internal/humanize", nil},
	{"internal/redact", nil},
	{"internal/jsonindent", nil},
	{"internal/browser", nil},
	// Drawing: DOT and Mermaid text to SVG (Graphviz) and PNG (a browser).
	{"internal/dotrender", with()},
	{"internal/depcheck", nil},

	// Test support is checked only where a row names it. The endpoint
	// contract knows the interfaces it checks and nothing else: with an
	// implementation in reach it could test what one does instead of what the
	// interfaces promise.
	{"internal/testutil/endpointtest", []string{"mirror/endpoint", "mirror/oci"}},
	// The tests' registry process is built without -race once per machine:
	// the registry and its counters, nothing of the code under test.
	{"internal/testutil/registryproc", []string{"internal/registryserver", "mirror/oci", "internal/testutil/airlockbin", "internal/testutil/syncbuf"}},
	{"internal/testutil/registryproc/cmd/registryproc", []string{"internal/testutil/registryproc", "internal/testutil/testgc"}},
}
