package main

import (
	"github.com/spf13/pflag"

	"github.com/airlock-mirror/airlock/pipeline"
)

// addReleaseFlags adds the flags of OpenShift releases (mirror.platform):
// the update service, the signature store and keys, and oc-mirror's
// --ignore-release-signature.
func addReleaseFlags(f *pflag.FlagSet, o *pipeline.Options) {
	f.StringVar(&o.Releases.GraphURL, "graph-url", "", "update service URL for mirror.platform channels (default: $UPDATE_URL_OVERRIDE, else OpenShift's or OKD's service); not for disk-to-mirror, which reads the graphs the archive carries")
	f.BoolVar(&o.Releases.AllowConditional, "allow-conditional-updates", false, "shortest paths between releases may take conditional updates (recommended only to clusters their risks do not match); the risks are listed in the summary")
	f.StringVar(&o.Releases.SignatureURL, "release-signature-url", "", "release signature store base URL (…/sha256=<hex>/signature-N below it; default: $OCP_SIGNATURE_URL, else Red Hat's)")
	f.StringVar(&o.Releases.SignatureKeys, "release-signature-keys", "", "file of armored OpenPGP public keys release signatures are verified with, instead of Red Hat's release keys (default: the file $OCP_SIGNATURE_VERIFICATION_PK names)")
	f.StringVar(&o.Releases.GraphDataURL, "graph-data-url", "", "where mirror.platform.graph reads the update service's graph-data tarball (default: https://api.openshift.com/api/upgrades_info/graph-data)")
	f.StringVar(&o.Releases.GraphDataFile, "graph-data-file", "", "the update service's graph-data tarball as a local file, for mirror.platform.graph at sites that cannot reach the service (download it from the --graph-data-url address elsewhere)")
	f.StringVar(&o.Releases.GraphBaseImage, "graph-base-image", "", "the image mirror.platform.graph adds the graph data to; it needs /bin/bash and cp (default: registry.access.redhat.com/ubi9/ubi:latest, as oc-mirror)")
	f.BoolVar(&o.Releases.IgnoreSignatures, "ignore-release-signature", false, "mirror release payloads WITHOUT verifying their signatures (each is warned about); by default a release whose signature is missing or does not verify is refused")
}
