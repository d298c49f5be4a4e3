// Package signature fetches and verifies the signatures of OpenShift release
// payloads: "atomic container signatures" (containers/image's simple signing
// format), OpenPGP signed messages whose literal data is a JSON document naming
// the signed manifest digest and the image's identity.
//
// Where they come from: a signature store laid out as
// <URL>/sha256=<hex>/signature-N, N = 1, 2, … until the store answers 404
// (NewStore; Red Hat's at DefaultURL, OCP_SIGNATURE_URL or an option), or the
// files an archive carried to the disconnected side (FromFiles).
//
// What is checked (Verify): each signature is read whole before its verdict;
// it must be made by a key of the keyring (Red Hat's release key 2 and beta
// key 2 by default: DefaultKeys; RSA and ed25519 keys both work), its type must
// be "atomic container signature", its signed digest must equal the payload's
// digest, and the repository of its signed identity must be the payload's
// repository (the tag is ignored: Red Hat signs quay.io/openshift-release-dev/
// ocp-release:4.15.0-x86_64 while payloads are pulled by digest). One
// signature that passes is enough; when none does, every signature's reason is
// kept in the Refusal.
//
// Check is what a release content source calls, at mirror time and again on
// the disconnected side. The package is an engine: no copying, no workflow, no
// registry.
package signature
