package helm

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/distribution/reference"
	"k8s.io/client-go/util/jsonpath"
)

// Found is one image a rendered chart names, and where.
type Found struct {
	// Image is the reference as the chart renders it.
	Image string
	// Where says where in the chart: "templates/cron.yaml CronJob x
	// .spec.jobTemplate.spec.template.spec.containers[0].image".
	Where []string
}

// podSpecPaths are where workload kinds keep their pod template's spec.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
	"DeploymentConfig":      {"spec", "template", "spec"},
}

// Images finds the images r names: the containers, init containers and
// ephemeral containers of every workload kind (Pod, Deployment,
// StatefulSet, DaemonSet, ReplicaSet, Job, CronJob's job template), their
// environment values that are image references, and what imagePaths
// (JSONPath expressions) select in any object. Sorted by image.
func Images(r *Rendered, imagePaths []string) ([]Found, error) {
	found := map[string]*Found{}
	add := func(img, where string) {
		img = strings.TrimSpace(img)
		if img == "" {
			return
		}
		f, ok := found[img]
		if !ok {
			f = &Found{Image: img}
			found[img] = f
		}
		f.Where = append(f.Where, where)
	}
	var jps []*jsonpath.JSONPath
	for _, p := range imagePaths {
		jp := jsonpath.New("imagePaths").AllowMissingKeys(true)
		if err := jp.Parse(p); err != nil {
			return nil, fmt.Errorf("imagePaths %q: %w", p, err)
		}
		jps = append(jps, jp)
	}
	for _, o := range r.Objects {
		at := fmt.Sprintf("%s %s %s ", o.File, o.Kind, o.Name)
		if path, ok := podSpecPaths[o.Kind]; ok {
			if spec, ok := dig(o.Body, path).(map[string]any); ok {
				prefix := "." + strings.Join(path, ".")
				for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
					cs, _ := spec[field].([]any)
					for i, c := range cs {
						cm, _ := c.(map[string]any)
						cp := fmt.Sprintf("%s.%s[%d]", prefix, field, i)
						if img, ok := cm["image"].(string); ok {
							add(img, at+cp+".image")
						}
						envs, _ := cm["env"].([]any)
						for j, e := range envs {
							em, _ := e.(map[string]any)
							if v, ok := em["value"].(string); ok && LooksLikeImage(v) {
								add(v, fmt.Sprintf("%s%s.env[%d].value", at, cp, j))
							}
						}
					}
				}
			}
		}
		for k, jp := range jps {
			res, err := jp.FindResults(o.Body)
			if err != nil {
				continue // the path names nothing in this object
			}
			for _, rs := range res {
				for _, v := range rs {
					if !v.IsValid() || !v.CanInterface() {
						continue
					}
					if s, ok := v.Interface().(string); ok && isReference(s) {
						add(s, at+imagePaths[k])
					}
				}
			}
		}
	}
	out := make([]Found, 0, len(found))
	for _, f := range found {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Image < out[j].Image })
	return out, nil
}

func dig(m map[string]any, path []string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

var domainRE = regexp.MustCompile(`^(localhost|[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)+|[a-zA-Z0-9.-]+:[0-9]+)/`)

// LooksLikeImage reports whether s is an image reference that names its
// registry (quay.io/ns/app:1.0, reg:5000/app@sha256:…): a value in an
// environment variable or an image path is taken as an image only then, so
// that "info" or "true" are not.
func LooksLikeImage(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\n") || !domainRE.MatchString(s) {
		return false
	}
	_, err := reference.ParseNormalizedNamed(s)
	return err == nil
}

// isReference reports whether s is an image reference as an image path
// selects it: it parses, and it has a path, a tag or a digest ("nginx:1.2",
// "team/app"), so that a bare word ("debug", a log level in an environment
// value the path also selects) is not taken for an image.
func isReference(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\n") || !strings.ContainsAny(s, "/:@") {
		return false
	}
	_, err := reference.ParseNormalizedNamed(s)
	return err == nil
}
