package helm

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// Chart is a loaded chart and the archive it came from.
type Chart struct {
	// Archive is the chart archive (.tgz), as downloaded or packaged.
	Archive []byte
	chart   *chart.Chart
}

// Name and Version are the chart's own (Chart.yaml).
func (c *Chart) Name() string    { return c.chart.Metadata.Name }
func (c *Chart) Version() string { return c.chart.Metadata.Version }

// Metadata is Chart.yaml as JSON (the OCI artifact's config).
func (c *Chart) Metadata() ([]byte, error) { return jsonOf(c.chart.Metadata) }

// LoadArchive loads a chart archive (.tgz).
func LoadArchive(data []byte) (*Chart, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("load chart archive: %w", err)
	}
	return &Chart{Archive: data, chart: ch}, nil
}

// LoadPath loads a local chart: an archive or a chart folder (packaged into
// an archive, so that it can travel and be pushed).
func LoadPath(p string) (*Chart, error) {
	ch, err := loader.Load(p)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", p, err)
	}
	var data []byte
	if isDir(p) {
		data, err = Package(ch)
	} else {
		data, err = os.ReadFile(p)
	}
	if err != nil {
		return nil, fmt.Errorf("package chart %s: %w", p, err)
	}
	return &Chart{Archive: data, chart: ch}, nil
}

// Rendered is a chart rendered: its objects, by template file.
type Rendered struct {
	// Objects are the decoded objects, in template file order.
	Objects []Object
	// Files are the rendered template files, by path ("chart/templates/x.yaml").
	Files map[string]string
}

// Object is one rendered Kubernetes object.
type Object struct {
	// File is the template that rendered it.
	File string
	Kind string
	Name string
	Body map[string]any
}

// Render renders c as `helm template` does, with c's values merged under
// values (values win), sub-charts (aliases, conditions and tags honoured)
// included and Helm's default capabilities. A template whose required value
// is missing fails with Helm's message, which names the value.
func Render(c *Chart, values map[string]any) (*Rendered, error) {
	ch := c.chart
	vals := chartutil.Values{}
	if values != nil {
		vals = chartutil.Values(deepCopy(values))
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, fmt.Errorf("chart %s %s: sub-charts: %w", c.Name(), c.Version(), err)
	}
	opts := chartutil.ReleaseOptions{Name: c.Name(), Namespace: "default", Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities.Copy())
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: values: %w", c.Name(), c.Version(), err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: render: %w; set the value the template asks for under the chart's values (or valuesFile) in the configuration", c.Name(), c.Version(), err)
	}
	out := &Rendered{Files: files}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if ext := path.Ext(n); ext != ".yaml" && ext != ".yml" && ext != ".json" {
			continue // NOTES.txt, helpers
		}
		docs := releaseutil.SplitManifests(files[n])
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			doc := strings.TrimSpace(docs[k])
			if doc == "" {
				continue
			}
			var body map[string]any
			if err := yaml.Unmarshal([]byte(doc), &body); err != nil {
				return nil, fmt.Errorf("chart %s %s: %s renders invalid YAML: %w", c.Name(), c.Version(), n, err)
			}
			if body == nil {
				continue
			}
			kind, _ := body["kind"].(string)
			name := ""
			if md, ok := body["metadata"].(map[string]any); ok {
				name, _ = md["name"].(string)
			}
			out.Objects = append(out.Objects, Object{File: n, Kind: kind, Name: name, Body: body})
		}
	}
	return out, nil
}

func deepCopy(m map[string]any) map[string]any {
	b, err := jsonOf(m)
	if err != nil {
		return m
	}
	var out map[string]any
	if yaml.Unmarshal(b, &out) != nil {
		return m
	}
	return out
}
