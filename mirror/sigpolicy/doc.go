// Package sigpolicy judges source images by a containers-policy.json before
// they are copied (--policy FILE, --secure-policy, --registries.d DIR): each
// image, each instance of an index, is evaluated by containers/image's
// signature package (sigstoreSigned with keys, Fulcio and Rekor, signedBy GPG
// keys, insecureAcceptAnything, reject), its signatures read as skopeo and
// CRI-O read them (sigstore attachments in the registry, or a lookaside named
// in registries.d). It also names the one sigstore public key a policy
// requires, for the cluster's ClusterImagePolicy.
//
// containers/image reads the source through its own docker transport: that is
// where registries.d (attachments, lookaside) is implemented. The evaluation
// is built with the containers_image_openpgp tag (a pure-Go OpenPGP verifier
// instead of gpgme, so no cgo library is needed; make build sets it); a binary
// built without the tag refuses --policy with what to do.
//
// It knows no plan, no archive, no catalog and no other registry client: it
// is given repositories and digests.
package sigpolicy
