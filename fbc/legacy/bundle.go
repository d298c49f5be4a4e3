package legacy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/fbc"
)

// ErrNotBundle is returned (wrapped) when a folder is not an unpacked bundle.
var ErrNotBundle = errors.New("not an operator bundle")

// IsBundleDir reports whether dir looks like an unpacked bundle image: it holds
// the folders manifests and metadata (opm's test).
func IsBundleDir(dir string) bool {
	m, err1 := os.Stat(filepath.Join(dir, "manifests"))
	d, err2 := os.Stat(filepath.Join(dir, "metadata"))
	return err1 == nil && err2 == nil && m.IsDir() && d.IsDir()
}

// bundleAnnotations is metadata/annotations.yaml.
type bundleAnnotations struct {
	Annotations struct {
		Package        string `json:"operators.operatorframework.io.bundle.package.v1"`
		Channels       string `json:"operators.operatorframework.io.bundle.channels.v1"`
		DefaultChannel string `json:"operators.operatorframework.io.bundle.channel.default.v1"`
	} `json:"annotations"`
}

// typedValue is a property or a dependency of the metadata files.
type typedValue struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// BundleInfo is a rendered bundle with what its annotations say about the
// channels it wants.
type BundleInfo struct {
	Bundle *fbc.Bundle
	// Channels and DefaultChannel are the bundle's annotations
	// (operators.operatorframework.io.bundle.channels.v1 and
	// ….channel.default.v1).
	Channels       []string
	DefaultChannel string
	// Version is the CSV's spec.version; Replaces, Skips and SkipRange its
	// upgrade edges (spec.replaces, spec.skips, annotation olm.skipRange).
	Version, Replaces, SkipRange string
	Skips                        []string
}

// RenderBundleDir renders the unpacked bundle in dir (manifests/ and
// metadata/annotations.yaml, as a bundle image holds them) into one olm.bundle
// as `opm render` of opm v1.73 does, with image as its image ("" for a folder;
// the reference as given for an image):
//
//   - the objects are the first documents of the files of manifests/ (hidden
//     files, folders and files that do not decode left out; only the first CSV);
//     the CSV names the bundle and every CRD it owns must be there;
//   - properties: olm.package (name from the annotations, version and release
//     from the CSV), olm.gvk for every CRD version and owned API service,
//     olm.gvk.required for every required CRD and API service, the
//     dependencies of metadata/dependencies.yaml (olm.gvk as olm.gvk.required,
//     olm.package as olm.package.required, other types as properties of their
//     type), the properties of metadata/properties.yaml and of the CSV
//     annotation olm.properties, and one olm.bundle.object per object; sorted by
//     type and value, bundle objects last;
//   - related images: the CSV's spec.relatedImages, then the bundle image and
//     the images of the CSV's deployments it does not list, sorted by image.
func RenderBundleDir(dir, image string) (*BundleInfo, error) {
	objs, err := bundleManifests(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	b, err := newBundleView(objs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", dir, ErrNotBundle, err)
	}
	name := b.csv.name
	if err := b.checkOwnedAPIs(); err != nil {
		return nil, fmt.Errorf("%s: bundle %s: %w", dir, name, err)
	}
	ann, deps, fileProps, err := bundleMetadata(filepath.Join(dir, "metadata"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	info, err := renderBundle(b, ann, deps, fileProps, image)
	if err != nil {
		return nil, fmt.Errorf("%s: bundle %s: %w", dir, name, err)
	}
	return info, nil
}

// bundleManifests decodes the objects of a bundle's manifests folder.
func bundleManifests(dir string) ([]*object, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: reading its manifests folder: %v", ErrNotBundle, err)
	}
	var objs []*object
	csvFound := false
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		doc, err := firstDocument(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		o, err := decodeObject(doc)
		if err != nil || o.m == nil {
			continue
		}
		if o.kind == "ClusterServiceVersion" {
			if csvFound {
				continue
			}
			csvFound = true
		}
		objs = append(objs, o)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%w: no bundle objects found in %s", ErrNotBundle, dir)
	}
	return objs, nil
}

// bundleMetadata reads the annotations (required), dependencies and properties
// files of a bundle's metadata folder: for each, the first file (by name) that
// decodes to one that is not empty.
func bundleMetadata(dir string) (ann *bundleAnnotations, deps, props []typedValue, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: reading its metadata folder: %v", ErrNotBundle, err)
	}
	var depsFound, propsFound bool
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if ann == nil {
			var a bundleAnnotations
			if decodeFirstInto(p, &a) == nil && a.Annotations != (bundleAnnotations{}).Annotations {
				ann = &a
			}
		}
		if !depsFound {
			var d struct {
				Dependencies []typedValue `json:"dependencies"`
			}
			if decodeFirstInto(p, &d) == nil && len(d.Dependencies) > 0 {
				deps, depsFound = d.Dependencies, true
			}
		}
		if !propsFound {
			var d struct {
				Properties []typedValue `json:"properties"`
			}
			if decodeFirstInto(p, &d) == nil && len(d.Properties) > 0 {
				props, propsFound = d.Properties, true
			}
		}
	}
	if ann == nil {
		return nil, nil, nil, fmt.Errorf("%w: no annotations file (metadata/annotations.yaml naming operators.operatorframework.io.bundle.package.v1) in %s", ErrNotBundle, dir)
	}
	return ann, deps, props, nil
}

// decodeFirstInto decodes the first document of the file at p into v, as
// Kubernetes' YAML-or-JSON decoder does.
func decodeFirstInto(p string, v any) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, sniffLen)
	head, _ := br.Peek(sniffLen)
	if bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("{")) {
		return json.NewDecoder(br).Decode(v)
	}
	doc, err := firstYAMLDocument(br)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(doc, v)
}

// release is the CSV's spec.release: a string, or a number written as one.
func (c *csvView) release() (string, error) {
	var raw json.RawMessage
	if err := c.specField("release", &raw); err != nil || raw == nil {
		return "", err
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		if n == float64(int64(n)) {
			return fmt.Sprintf("%d", int64(n)), nil
		}
		return fmt.Sprintf("%g", n), nil
	}
	return "", errors.New("release field must be a string or number")
}

type packageValue struct {
	PackageName string `json:"packageName"`
	Version     string `json:"version"`
	Release     string `json:"release,omitzero"`
}

// renderBundle builds the olm.bundle (opm's bundleToDeclcfg).
func renderBundle(b *bundleView, ann *bundleAnnotations, deps, fileProps []typedValue, image string) (*BundleInfo, error) {
	version, err := b.csv.version()
	if err != nil {
		return nil, fmt.Errorf("spec.version: %v", err)
	}
	release, err := b.csv.release()
	if err != nil {
		return nil, fmt.Errorf("spec.release: %v", err)
	}
	provided, err := b.providedAPIs()
	if err != nil {
		return nil, err
	}
	required, err := b.requiredAPIs()
	if err != nil {
		return nil, err
	}
	// The bundle's properties as opm's parser collects them: the properties file,
	// then the package of the annotations, the CSV's olm.properties and the
	// provided APIs; duplicates removed.
	var bprops []typedValue
	bprops = append(bprops, fileProps...)
	pkgName := ann.Annotations.Package
	if pkgName != "" {
		v, _ := json.Marshal(packageValue{pkgName, version, release})
		bprops = append(bprops, typedValue{"olm.package", v})
	}
	if v, ok := b.csv.annotations["olm.properties"]; ok {
		var ps []typedValue
		if json.Unmarshal([]byte(v), &ps) == nil {
			bprops = append(bprops, ps...)
		}
	}
	for _, k := range sortedAPIs(provided) {
		bprops = append(bprops, typedValue{"olm.gvk", json.RawMessage(gvkValue(k))})
	}

	// opm's ObjectsAndPropertiesFromBundle.
	gvks := map[gvk]bool{}
	reqs := map[gvk]bool{}
	var pkgProp *fbc.Property
	var others []fbc.Property
	for i, p := range bprops {
		switch p.Type {
		case "olm.gvk":
			var v gvk
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return nil, fmt.Errorf("property %d (olm.gvk): %v", i+1, err)
			}
			gvks[v] = true
		case "olm.package":
			var v packageValue
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return nil, fmt.Errorf("property %d (olm.package): %v", i+1, err)
			}
			pp := marshalProp(fbc.PropertyPackage, v)
			pkgProp = &pp
		default:
			others = append(others, fbc.Property{Type: p.Type, Value: compact(p.Value)})
		}
	}
	var pkgRequired []fbc.Property
	for i, d := range deps {
		switch d.Type {
		case "olm.gvk":
			var v gvk
			if err := json.Unmarshal(d.Value, &v); err != nil {
				return nil, fmt.Errorf("dependency %d (olm.gvk): %v", i+1, err)
			}
			reqs[v] = true
		case "olm.package":
			var v packageValue
			if err := json.Unmarshal(d.Value, &v); err != nil {
				return nil, fmt.Errorf("dependency %d (olm.package): %v", i+1, err)
			}
			pkgRequired = append(pkgRequired, marshalProp(fbc.PropertyPackageRequired, struct {
				PackageName  string `json:"packageName"`
				VersionRange string `json:"versionRange"`
			}{v.PackageName, v.Version}))
		default:
			others = append(others, fbc.Property{Type: d.Type, Value: compact(d.Value)})
		}
	}
	for k := range provided {
		gvks[gvk{Group: k.group, Kind: k.kind, Version: k.version}] = true
	}
	for k := range required {
		reqs[gvk{Group: k.group, Kind: k.kind, Version: k.version}] = true
	}
	var props []fbc.Property
	for _, o := range b.objects {
		enc, err := o.encode()
		if err != nil {
			return nil, err
		}
		props = append(props, marshalProp(fbc.PropertyBundleObject, struct {
			Data []byte `json:"data"`
		}{bytes.TrimRight(enc, "\n")}))
	}
	if pkgProp == nil {
		pp := marshalProp(fbc.PropertyPackage, packageValue{pkgName, version, release})
		pkgProp = &pp
	}
	props = append(props, *pkgProp)
	for g := range gvks {
		props = append(props, marshalProp(fbc.PropertyGVK, g))
	}
	for g := range reqs {
		props = append(props, marshalProp(fbc.PropertyGVKRequired, g))
	}
	props = append(props, pkgRequired...)
	props = append(props, others...)
	sort.SliceStable(props, func(i, j int) bool {
		if props[i].Type != props[j].Type {
			return props[i].Type < props[j].Type
		}
		return string(props[i].Value) < string(props[j].Value)
	})
	var light, heavy []fbc.Property
	for _, p := range props {
		if p.Type == fbc.PropertyBundleObject || p.Type == fbc.PropertyCSVMetadata {
			heavy = append(heavy, p)
		} else {
			light = append(light, p)
		}
	}
	rel, err := bundleRelatedImages(b, image)
	if err != nil {
		return nil, err
	}
	replaces, err := b.csv.replaces()
	if err != nil {
		return nil, fmt.Errorf("spec.replaces: %v", err)
	}
	skips, err := b.csv.skips()
	if err != nil {
		return nil, fmt.Errorf("spec.skips: %v", err)
	}
	info := &BundleInfo{
		Bundle: &fbc.Bundle{Name: b.csv.name, Package: pkgName, Image: image,
			Properties: append(light, heavy...), RelatedImages: rel},
		DefaultChannel: ann.Annotations.DefaultChannel,
		Version:        version,
		Replaces:       replaces,
		Skips:          skips,
		SkipRange:      b.csv.annotations["olm.skipRange"],
	}
	if ann.Annotations.Channels != "" {
		info.Channels = strings.Split(ann.Annotations.Channels, ",")
	}
	return info, nil
}

// bundleRelatedImages is opm's getRelatedImages: the CSV's related images, then
// the bundle image and the deployments' images it does not list, sorted by
// image.
func bundleRelatedImages(b *bundleView, image string) ([]fbc.RelatedImage, error) {
	var rel []fbc.RelatedImage
	if err := b.csv.specField("relatedImages", &rel); err != nil {
		return nil, fmt.Errorf("spec.relatedImages: %v", err)
	}
	have := map[string]bool{}
	for _, r := range rel {
		have[r.Image] = true
	}
	if image != "" && !have[image] {
		rel = append(rel, fbc.RelatedImage{Image: image})
	}
	imgs, err := b.images()
	if err != nil {
		return nil, err
	}
	// b.images also holds the related images, which are already in.
	var ops []string
	for img := range imgs {
		if !have[img] {
			ops = append(ops, img)
		}
	}
	sort.Strings(ops)
	for _, img := range ops {
		if img == image && image != "" {
			continue
		}
		rel = append(rel, fbc.RelatedImage{Image: img})
	}
	sort.SliceStable(rel, func(i, j int) bool { return rel[i].Image < rel[j].Image })
	return rel, nil
}

// marshalProp encodes v with encoding/json (HTML characters escaped, as opm's
// property builders do).
func marshalProp(typ string, v any) fbc.Property {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding a %s value: %v", typ, err))
	}
	return fbc.Property{Type: typ, Value: b}
}

// compact is a JSON value without insignificant white space (a value that is
// not JSON is kept as it is; validation reports it).
func compact(v json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return v
	}
	return buf.Bytes()
}
