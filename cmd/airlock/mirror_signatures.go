package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/pipeline"
)

// addSignatureFlags adds --signatures and oc-mirror's --remove-signatures (the
// returned function reads them once flags are parsed), --refresh-signatures,
// --signature-key, the archive keys and the signature policy (--policy,
// --secure-policy, --registries.d).
func addSignatureFlags(f *pflag.FlagSet, o *pipeline.Options) func(stderr io.Writer) (signature.Mode, error) {
	f.StringVar(&o.Archive.SignKey, "sign-key", "", "mirror-to-disk: sign the archive with this private key (PEM PKCS#8 Ed25519 or ECDSA P-256, or a cosign key with $COSIGN_PASSWORD)")
	f.StringVar(&o.Archive.VerifyKey, "archive-key", "", "disk-to-mirror: refuse the archive unless it is signed by this public key (PEM), unchanged since")
	f.StringVar(&o.Signatures.Key, "signature-key", "", "PEM public key (cosign.pub) the cluster must require signatures by: writes ClusterImagePolicy objects for the mirrored source repositories into cluster-resources/")
	mode := f.String("signatures", string(signature.BestEffort), "attachments (cosign signatures, attestations, SBOMs, OCI referrers): best-effort (carry what exists, list unsigned images), required (fail unsigned images) or off")
	remove := f.Bool("remove-signatures", false, "oc-mirror's flag: the same as --signatures off")
	f.BoolVar(&o.Signatures.Refresh, "refresh-signatures", false, "look at the source for every image's attachments again (by default an image digest an earlier run of this workspace looked at is not asked about again: working-dir/attachments.json)")
	f.StringVar(&o.Signatures.Policy.Policy, "policy", "", "containers-policy.json judging every source image before it is copied (sigstoreSigned, signedBy, reject…): a refused image fails with the policy's reason; its one sigstore key is the ClusterImagePolicy's unless --signature-key")
	f.BoolVar(&o.Signatures.Policy.Secure, "secure-policy", false, "oc-mirror's flag: judge the source images by the system's policy ($HOME/.config/containers/policy.json, else /etc/containers/policy.json) unless --policy names one")
	f.StringVar(&o.Signatures.Policy.RegistriesDir, "registries.d", "", "registries.d folder saying where signatures live (use-sigstore-attachments, lookaside), as skopeo's (default: sigstore attachments in every registry)")
	return func(stderr io.Writer) (signature.Mode, error) {
		if o.Signatures.Policy.RegistriesDir != "" && !o.Signatures.Policy.Enabled() {
			// oc-mirror command lines give it to say where signatures are
			// copied from: airlock carries attachments by --signatures.
			fmt.Fprintln(stderr, "airlock: note: --registries.d is read by --policy and --secure-policy only; attachments are carried by --signatures (docs/signatures.md)")
		}
		m, err := signature.ParseMode(*mode)
		if err != nil {
			return "", err
		}
		if *remove {
			if f.Changed("signatures") && m != signature.Off {
				return "", fmt.Errorf("--remove-signatures contradicts --signatures %s: use one of them", m)
			}
			m = signature.Off
		}
		return m, nil
	}
}
