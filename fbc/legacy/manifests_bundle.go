package legacy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// apiKey is a group, version and kind (opm's registry.APIKey without the
// plural, which nothing converted uses).
type apiKey struct{ group, version, kind string }

// csvView is what opm's loader reads from a ClusterServiceVersion.
type csvView struct {
	name        string
	annotations map[string]string
	spec        json.RawMessage

	// fields is spec decoded into its members, once (fieldsErr its error).
	fields    map[string]*json.RawMessage
	fieldsErr error
	decoded   bool
}

// newCSVView reads the metadata and spec of a CSV object, as opm's conversion to
// its ClusterServiceVersion type does (annotations must be strings).
func newCSVView(o *object) (*csvView, error) {
	raw, err := json.Marshal(o.m)
	if err != nil {
		return nil, err
	}
	var c struct {
		Metadata struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("reading the ClusterServiceVersion: %v", err)
	}
	return &csvView{name: c.Metadata.Name, annotations: c.Metadata.Annotations, spec: c.Spec}, nil
}

// specField decodes spec.<key> into v; a missing or null key leaves v alone.
func (c *csvView) specField(key string, v any) error {
	if !c.decoded {
		c.fieldsErr = json.Unmarshal(c.spec, &c.fields)
		c.decoded = true
	}
	if c.fieldsErr != nil {
		return c.fieldsErr
	}
	raw, ok := c.fields[key]
	if !ok || raw == nil {
		return nil
	}
	return json.Unmarshal(*raw, v)
}

func (c *csvView) version() (string, error) {
	var v string
	err := c.specField("version", &v)
	return v, err
}

func (c *csvView) replaces() (string, error) {
	var v string
	err := c.specField("replaces", &v)
	return v, err
}

func (c *csvView) skips() ([]string, error) {
	var v []string
	err := c.specField("skips", &v)
	return v, err
}

// definitionKey is an entry of spec.customresourcedefinitions or
// spec.apiservicedefinitions.
type definitionKey struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
}

type definitions struct {
	Owned    []*definitionKey `json:"owned"`
	Required []*definitionKey `json:"required"`
}

func (c *csvView) definitions(key string) (definitions, error) {
	var d definitions
	err := c.specField(key, &d)
	return d, err
}

// splitCRDName splits "plural.group".
func splitCRDName(name string) (plural, group string, err error) {
	plural, group, ok := strings.Cut(name, ".")
	if !ok {
		return "", "", fmt.Errorf("couldn't parse plural.group from crd name: %s", name)
	}
	return plural, group, nil
}

// crdView is what opm reads from a CustomResourceDefinition.
type crdView struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
		Version  string `json:"version"`
		Versions []struct {
			Name string `json:"name"`
		} `json:"versions"`
	} `json:"spec"`
}

// bundleView is a bundle as opm's loader sees it: its objects, its CSV and its
// CRDs.
type bundleView struct {
	objects []*object
	csv     *csvView
	crds    []crdView
	// v1beta1 marks the CRDs whose spec.version also counts.
	v1beta1 []bool
}

// newBundleView reads the CSV (the first object of kind ClusterServiceVersion)
// and the CRDs (apiVersion …/v1 or …/v1beta1) of a bundle's objects.
func newBundleView(objs []*object) (*bundleView, error) {
	b := &bundleView{objects: objs}
	for _, o := range objs {
		if o.kind == "ClusterServiceVersion" {
			c, err := newCSVView(o)
			if err != nil {
				return nil, err
			}
			b.csv = c
			break
		}
	}
	for _, o := range objs {
		if o.kind != "CustomResourceDefinition" || (o.version != "v1" && o.version != "v1beta1") {
			continue
		}
		raw, err := json.Marshal(o.m)
		if err != nil {
			return nil, err
		}
		var c crdView
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, fmt.Errorf("error decoding %s CRD: %v", o.version, err)
		}
		b.crds = append(b.crds, c)
		b.v1beta1 = append(b.v1beta1, o.version == "v1beta1")
	}
	if b.csv == nil {
		return nil, errors.New("no ClusterServiceVersion among the bundle's objects")
	}
	return b, nil
}

// providedAPIs are the versions of the bundle's CRDs and the CSV's owned API
// services.
func (b *bundleView) providedAPIs() (map[apiKey]bool, error) {
	out := map[apiKey]bool{}
	for i, c := range b.crds {
		for _, v := range c.Spec.Versions {
			out[apiKey{c.Spec.Group, v.Name, c.Spec.Names.Kind}] = true
		}
		if b.v1beta1[i] && c.Spec.Version != "" {
			out[apiKey{c.Spec.Group, c.Spec.Version, c.Spec.Names.Kind}] = true
		}
	}
	d, err := b.csv.definitions("apiservicedefinitions")
	if err != nil {
		return nil, fmt.Errorf("error getting apiservice definitions: %v", err)
	}
	for _, a := range d.Owned {
		out[apiKey{a.Group, a.Version, a.Kind}] = true
	}
	return out, nil
}

// requiredAPIs are the CSV's required CRDs and API services.
func (b *bundleView) requiredAPIs() (map[apiKey]bool, error) {
	out := map[apiKey]bool{}
	crds, err := b.csv.definitions("customresourcedefinitions")
	if err != nil {
		return nil, err
	}
	for _, r := range crds.Required {
		_, group, err := splitCRDName(r.Name)
		if err != nil {
			return nil, err
		}
		out[apiKey{group, r.Version, r.Kind}] = true
	}
	apis, err := b.csv.definitions("apiservicedefinitions")
	if err != nil {
		return nil, err
	}
	for _, a := range apis.Required {
		out[apiKey{a.Group, a.Version, a.Kind}] = true
	}
	return out, nil
}

// checkOwnedAPIs is opm's AllProvidedAPIsInBundle: every CRD the CSV owns must
// be in the bundle.
func (b *bundleView) checkOwnedAPIs() error {
	provided, err := b.providedAPIs()
	if err != nil {
		return err
	}
	crds, err := b.csv.definitions("customresourcedefinitions")
	if err != nil {
		return err
	}
	for _, o := range crds.Owned {
		_, group, err := splitCRDName(o.Name)
		if err != nil {
			return err
		}
		if k := (apiKey{group, o.Version, o.Kind}); !provided[k] {
			return fmt.Errorf("the CSV owns CRD %s (%s/%s %s) but the bundle holds no CustomResourceDefinition serving it", o.Name, group, o.Version, o.Kind)
		}
	}
	return nil
}

// images are the images opm records for a bundle (table related_image): the
// containers and init containers of the CSV's deployments (install strategy
// "deployment") and its spec.relatedImages.
func (b *bundleView) images() (map[string]bool, error) {
	out := map[string]bool{}
	var install struct {
		Strategy string `json:"strategy"`
		Spec     struct {
			Deployments []struct {
				Spec struct {
					Template struct {
						Spec struct {
							Containers     []container `json:"containers"`
							InitContainers []container `json:"initContainers"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			} `json:"deployments"`
		} `json:"spec"`
	}
	if err := b.csv.specField("install", &install); err != nil {
		return nil, err
	}
	if install.Strategy == "deployment" {
		for _, d := range install.Spec.Deployments {
			for _, c := range d.Spec.Template.Spec.Containers {
				out[c.Image] = true
			}
			for _, c := range d.Spec.Template.Spec.InitContainers {
				out[c.Image] = true
			}
		}
	}
	var related []struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	}
	if err := b.csv.specField("relatedImages", &related); err != nil {
		return nil, err
	}
	for _, r := range related {
		out[r.Image] = true
	}
	return out, nil
}

// container is the part of a container spec opm's typed decoding checks most
// often: its image and the string values of its environment.
type container struct {
	Image string `json:"image"`
	Env   []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env"`
}

// annotationProperties are the properties of the CSV annotation
// olm.properties, each value re-encoded as opm stores it and checked for the
// types opm knows.
func (b *bundleView) annotationProperties() ([]kvString, error) {
	v, ok := b.csv.annotations["olm.properties"]
	if !ok {
		return nil, nil
	}
	var props []struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal([]byte(v), &props); err != nil {
		return nil, err
	}
	var out []kvString
	for _, p := range props {
		value, err := json.Marshal(&p.Value)
		if err != nil {
			return nil, err
		}
		var check any
		switch p.Type {
		case "olm.label":
			check = &struct {
				Label string `json:"label"`
			}{}
		case "olm.package":
			check = &struct {
				PackageName string `json:"packageName"`
				Version     string `json:"version"`
			}{}
		case "olm.gvk":
			check = &gvk{}
		}
		if check != nil {
			if err := json.Unmarshal(p.Value, check); err != nil {
				return nil, err
			}
		}
		out = append(out, kvString{p.Type, string(value)})
	}
	return out, nil
}

// kvString is a property or dependency row before it is stored.
type kvString struct{ typ, value string }

// gvkValue encodes a GVK as opm's loader stores it.
func gvkValue(k apiKey) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	_ = enc.Encode(gvk{Group: k.group, Kind: k.kind, Version: k.version})
	return strings.TrimRight(buf.String(), "\n")
}
