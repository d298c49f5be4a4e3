package manifests

import (
	"fmt"
	"strings"
)

// purpose says what each kind of file is for.
var purpose = map[string]string{
	KindIDMS:               "redirects pulls BY DIGEST to the mirror registry (OpenShift 4.13 and later)",
	KindITMS:               "redirects pulls BY TAG to the mirror registry (OpenShift 4.13 and later)",
	KindICSP:               "redirects pulls by digest, for OpenShift before 4.13 and tools that still read ICSP",
	KindCatalogSource:      "makes the mirrored catalog available to OLM (OperatorHub) in openshift-marketplace",
	KindClusterCatalog:     "makes the mirrored catalog available to OLM v1 (OpenShift 4.18 and later)",
	KindConfigMap:          "release signatures (openshift-config-managed) the cluster-version operator verifies mirrored releases with when it cannot reach Red Hat's signature store; the .yaml and the .json hold the same objects",
	KindClusterImagePolicy: "makes CRI-O require a sigstore signature by the given key for these source repositories, read from the mirror (OpenShift 4.20 and later; the catalogs, rebuilt by airlock, are not in its scopes)",
}

// readme renders README.txt: what each file is for and how to apply them. It depends
// only on the file list, so it is as deterministic as the files.
func readme(files []File, skipped []string) []byte {
	var b strings.Builder
	b.WriteString(`Cluster resources written by airlock for the images it mirrored.

Apply them as a cluster administrator.

OpenShift 4.13 and later (from this folder):

    oc apply -f .

  This applies the ImageDigestMirrorSet, ImageTagMirrorSet, CatalogSource and
  ClusterCatalog files. It does not descend into icsp/. On a cluster without OLM v1
  (before 4.18) oc reports 'no matches for kind "ClusterCatalog"' for the cc-*.yaml
  files; everything else is applied.

OpenShift before 4.13 (no ImageDigestMirrorSet/ImageTagMirrorSet there):

    oc apply -f icsp/
    for f in cs-*.yaml; do oc apply -f "$f"; done

  ImageContentSourcePolicy only redirects pulls by digest: images referenced by tag
  (see itms-*.yaml) are not redirected on those clusters.

Do not apply icsp/ on a cluster that already has ImageDigestMirrorSet or
ImageTagMirrorSet objects: OpenShift does not allow both kinds at the same time.
Changing mirror sets makes the Machine Config Operator update registries.conf on
every node.

airlock rewrites this folder on every run: the files listed below are replaced, and
files it wrote earlier that are not listed are removed.

Files:
`)
	for _, f := range files {
		if f.Kind == "" {
			continue
		}
		line := fmt.Sprintf("  %s\n      %s %s: %s", f.Name, f.Kind, f.ObjectName, purpose[f.Kind])
		if f.Rules > 0 {
			unit := "rule"
			if f.Kind == KindClusterImagePolicy {
				unit = "scope"
			}
			line += fmt.Sprintf(" (%d %s", f.Rules, unit)
			if f.Rules != 1 {
				line += "s"
			}
			line += ")"
		}
		b.WriteString(line + "\n")
	}
	if len(files) == 0 {
		b.WriteString("  (none: nothing was mirrored)\n")
	}
	if len(skipped) > 0 {
		b.WriteString("\nImages without a mirror rule (not registry references, so a cluster never pulls them by\nthis name):\n")
		for _, s := range skipped {
			b.WriteString("  " + s + "\n")
		}
	}
	return []byte(b.String())
}
