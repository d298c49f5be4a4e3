package kubejob_test

import (
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/kube"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline/kubejob"
)

// TestValidate holds what airlock kube job and airlock kube image refuse
// before reading a file or building an image, with the messages users see.
func TestValidate(t *testing.T) {
	job := func(edit func(*kubejob.JobOptions)) error {
		o := kubejob.JobOptions{ConfigPath: "isc.yaml", PlanFile: "plan.json", JobOptions: kube.JobOptions{
			Image: "reg.example/airlock:v1", Destination: location.Docker("reg.example/ocp"), Shards: 2,
		}}
		edit(&o)
		return o.Validate()
	}
	image := func(edit func(*kubejob.ImageOptions)) error {
		o := kubejob.ImageOptions{Destination: location.Docker("reg.example/tools/airlock:v1"), Binary: "/bin/airlock"}
		edit(&o)
		return o.Validate()
	}
	tests := []struct {
		name string
		err  error
		want string // "" when valid
	}{
		{"job", job(func(*kubejob.JobOptions) {}), ""},
		{"job without a configuration", job(func(o *kubejob.JobOptions) { o.ConfigPath = "" }), "no ImageSetConfiguration given: use -c imageset.yaml (the one --plan-only used)"},
		{"job without a plan", job(func(o *kubejob.JobOptions) { o.PlanFile = "" }), "no plan given: use --plan FILE (written by airlock mirror --plan-only)"},
		{"job without an image", job(func(o *kubejob.JobOptions) { o.Image = "" }), "no image: give --image REF (airlock kube image pushes one)"},
		{"job with a bad name", job(func(o *kubejob.JobOptions) { o.Name = "Airlock_Mirror" }), `name "Airlock_Mirror": want lower-case letters, digits and '-', at most 50 characters`},
		{"job with a bad namespace", job(func(o *kubejob.JobOptions) { o.Namespace = "-x" }), `namespace "-x" is not a valid namespace name`},
		{"job into a folder", job(func(o *kubejob.JobOptions) { o.Destination = location.File("/x") }), `destination "file:///x" must be docker://REGISTRY/NAMESPACE`},
		{"job without shards", job(func(o *kubejob.JobOptions) { o.Shards = 0 }), "shards 0: want at least 1"},
		{"image", image(func(*kubejob.ImageOptions) {}), ""},
		{"image into a folder", image(func(o *kubejob.ImageOptions) { o.Destination = location.File("/x") }), `destination "file:///x" must be docker://REGISTRY/REPOSITORY[:TAG]`},
		{"image without a destination", image(func(o *kubejob.ImageOptions) { o.Destination = location.Location{} }), `destination "" must be docker://REGISTRY/REPOSITORY[:TAG]`},
		{"image without a binary", image(func(o *kubejob.ImageOptions) { o.Binary = "" }), "no binary: give --binary FILE"},
	}
	for _, tc := range tests {
		if err := tc.err; (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q (\"\": valid)", tc.name, err, tc.want)
		}
	}
}
