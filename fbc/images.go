package fbc

import (
	"fmt"
	"sort"
	"strings"
)

// ImageUse is one image a catalog needs, with the bundles that use it.
type ImageUse struct {
	// Image is the reference as written in the catalog; a reference with neither
	// tag nor digest gets ":latest" (what a container runtime would pull).
	Image string `json:"image"`
	// Bundles use the image (as bundle image or related image), sorted.
	Bundles []BundleRef `json:"bundles"`
	// Names are the non-empty relatedImages[].name values given to the image, sorted.
	Names []string `json:"names,omitempty"`
}

// BundleRef names one bundle of one package.
type BundleRef struct {
	Package string `json:"package"`
	Bundle  string `json:"bundle"`
}

// Images returns every bundle image and related image of c, de-duplicated and
// sorted by reference, and warnings for the references it had to skip (empty) or
// complete (no tag and no digest: reported as ":latest").
func Images(c *Catalog) ([]ImageUse, []string) {
	if c == nil {
		return nil, nil
	}
	type acc struct {
		bundles map[BundleRef]bool
		names   map[string]bool
	}
	byImage := map[string]*acc{}
	var warns []string
	add := func(ref BundleRef, image, name, where string) {
		if strings.TrimSpace(image) == "" {
			warns = append(warns, fmt.Sprintf("package %q bundle %q: %s is empty: skipped", ref.Package, ref.Bundle, where))
			return
		}
		if !hasTagOrDigest(image) {
			warns = append(warns, fmt.Sprintf("package %q bundle %q: %s %q has neither tag nor digest: using %s:latest", ref.Package, ref.Bundle, where, image, image))
			image += ":latest"
		}
		a := byImage[image]
		if a == nil {
			a = &acc{bundles: map[BundleRef]bool{}, names: map[string]bool{}}
			byImage[image] = a
		}
		a.bundles[ref] = true
		if name != "" {
			a.names[name] = true
		}
	}
	for _, p := range c.Packages {
		for _, b := range p.Bundles {
			ref := BundleRef{Package: p.Name, Bundle: b.Name}
			// A bundle that inlines its objects may have no image (opm allows it).
			if b.Image != "" || !hasBundleObjects(b) {
				add(ref, b.Image, "", "image")
			}
			for i, ri := range b.RelatedImages {
				add(ref, ri.Image, ri.Name, fmt.Sprintf("relatedImages[%d].image", i))
			}
		}
	}
	out := make([]ImageUse, 0, len(byImage))
	for img, a := range byImage {
		u := ImageUse{Image: img, Bundles: make([]BundleRef, 0, len(a.bundles))}
		for r := range a.bundles {
			u.Bundles = append(u.Bundles, r)
		}
		sort.Slice(u.Bundles, func(i, j int) bool {
			if u.Bundles[i].Package != u.Bundles[j].Package {
				return u.Bundles[i].Package < u.Bundles[j].Package
			}
			return u.Bundles[i].Bundle < u.Bundles[j].Bundle
		})
		for n := range a.names {
			u.Names = append(u.Names, n)
		}
		sort.Strings(u.Names)
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Image < out[j].Image })
	return out, warns
}

func hasBundleObjects(b *Bundle) bool {
	for _, p := range b.Properties {
		if p.Type == PropertyBundleObject {
			return true
		}
	}
	return false
}

// hasTagOrDigest reports whether an image reference names a tag or a digest: a
// digest follows "@", a tag follows the last ":" of the last path component (a ":"
// before the first "/" is a registry port).
func hasTagOrDigest(ref string) bool {
	if strings.Contains(ref, "@") {
		return true
	}
	last := ref
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		last = ref[i+1:]
	}
	return strings.Contains(last, ":")
}
