// Package registryproc serves the tests' registries from processes of their
// own: cmd/registryproc, built without the race detector (Binary), so that a
// registry's hashing, storage and JSON do not pay for it while the code under
// test, in the test process, still runs under it.
//
// Run starts one registry (Config: airlock's embedded registry, or CNCF
// Distribution v3 from a configuration of its own with htpasswd or token
// auth; in memory or on disk; plain HTTP, a self-signed or a given
// certificate; mounts ignored) on 127.0.0.1:0 and counts the requests it
// answers (Counter). The process says where it listens on its standard
// output, answers "counts" and "reset" on its standard input, and dies with
// the test process. $AIRLOCK_TEST_REGISTRY=inprocess (InProcess) serves the
// registries in the test process instead.
//
// Test support only: the binary never links it (internal/depcheck).
package registryproc
