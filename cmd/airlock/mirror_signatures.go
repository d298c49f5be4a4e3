package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/pipeline"
)

// addSignatureFlags adds --signatures and oc-mirror's --remove-signatures (the
// returned function reads them once flags are parsed), --refresh-signatures
// and --signature-key.
func addSignatureFlags(f *pflag.FlagSet, o *pipeline.Options) func() (signature.Mode, error) {
	f.StringVar(&o.SignKey, "sign-key", "", "mirror-to-disk: sign the archive with this private key (PEM PKCS#8 Ed25519 or ECDSA P-256, or a cosign key with $COSIGN_PASSWORD)")
	f.StringVar(&o.ArchiveKey, "archive-key", "", "disk-to-mirror: refuse the archive unless it is signed by this public key (PEM), unchanged since")
	f.StringVar(&o.SignatureKey, "signature-key", "", "PEM public key (cosign.pub) the cluster must require signatures by: writes ClusterImagePolicy objects for the mirrored source repositories into cluster-resources/")
	mode := f.String("signatures", string(signature.BestEffort), "attachments (cosign signatures, attestations, SBOMs, OCI referrers): best-effort (carry what exists, list unsigned images), required (fail unsigned images) or off")
	remove := f.Bool("remove-signatures", false, "oc-mirror's flag: the same as --signatures off")
	f.BoolVar(&o.RefreshSignatures, "refresh-signatures", false, "look at the source for every image's attachments again (by default an image digest an earlier run of this workspace looked at is not asked about again: working-dir/attachments.json)")
	return func() (signature.Mode, error) {
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
