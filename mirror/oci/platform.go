package oci

import "strings"

// Platforms is a platform subset of images ("os/architecture" pairs, as the
// configuration's platforms: entries), the one implementation of which children
// of an index a subset keeps. The index itself is kept byte for byte (its digest
// is the one the cluster pulls): only the children of the other platforms are
// left out, which makes it a sparse index at the destination. An empty subset
// keeps every child.
type Platforms []string

// Docker's attestation entries in an index (buildx provenance and SBOMs): an
// entry whose platform is unknown/unknown, naming the child it is about.
const (
	annotationReferenceType   = "vnd.docker.reference.type"
	annotationReferenceDigest = "vnd.docker.reference.digest"
	referenceTypeAttestation  = "attestation-manifest"
)

// All reports whether the subset keeps every platform.
func (ps Platforms) All() bool { return len(ps) == 0 }

// Wants reports whether a child of platform "os/arch[/variant]" is kept: its
// os and architecture are one of the subset's pairs (every variant of an
// architecture is kept: linux/arm64 keeps linux/arm64/v8).
func (ps Platforms) Wants(platform string) bool {
	if ps.All() {
		return true
	}
	os, rest, _ := strings.Cut(platform, "/")
	arch, _, _ := strings.Cut(rest, "/")
	for _, p := range ps {
		pos, parch, _ := strings.Cut(p, "/")
		if pos == os && parch == arch {
			return true
		}
	}
	return false
}

// Keep returns the children of an index the subset keeps, in index order:
//   - a child with a platform is kept when Wants says so;
//   - an attestation entry (vnd.docker.reference.type attestation-manifest) is
//     kept when the child it is about is kept;
//   - any other child without a platform (a nested index, an artifact) is kept:
//     nothing says which platform it serves.
//
// With an empty subset it returns children unchanged.
func (ps Platforms) Keep(children []ChildManifest) []ChildManifest {
	if ps.All() {
		return children
	}
	kept := map[string]bool{}
	out := make([]ChildManifest, 0, len(children))
	for _, c := range children {
		if c.Annotations[annotationReferenceType] == referenceTypeAttestation || c.Platform == "" {
			continue
		}
		if ps.Wants(c.Platform) {
			kept[c.Digest.String()] = true
		}
	}
	for _, c := range children {
		switch {
		case c.Annotations[annotationReferenceType] == referenceTypeAttestation:
			if kept[c.Annotations[annotationReferenceDigest]] {
				out = append(out, c)
			}
		case c.Platform == "" || kept[c.Digest.String()]:
			out = append(out, c)
		}
	}
	return out
}

// Union is the subset that serves both a and b: every platform when either
// keeps every platform, else the pairs of both, each once, in order.
func (ps Platforms) Union(b Platforms) Platforms {
	if ps.All() || b.All() {
		return nil
	}
	out := append(Platforms(nil), ps...)
	for _, p := range b {
		dup := false
		for _, q := range out {
			dup = dup || q == p
		}
		if !dup {
			out = append(out, p)
		}
	}
	return out
}

// Offered lists the platforms the children of an index are for, each once, in
// order (for messages naming what an index offers).
func Offered(children []ChildManifest) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range children {
		if c.Platform != "" && c.Annotations[annotationReferenceType] != referenceTypeAttestation && !seen[c.Platform] {
			seen[c.Platform] = true
			out = append(out, c.Platform)
		}
	}
	return out
}

// KeepsAPlatform reports whether kept (what Keep returned) holds a child for
// one of the subset's platforms; false means an index offers none of them.
func (ps Platforms) KeepsAPlatform(kept []ChildManifest) bool {
	return len(Offered(kept)) > 0
}
