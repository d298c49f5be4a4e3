package pipeline_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/pipeline"
)

// TestValidate holds every combination of the mirror command's options that
// Validate refuses, with the message users see, and the combinations it must
// let through. It reads and writes nothing, so the paths need not exist.
func TestValidate(t *testing.T) {
	reg, other := location.Docker("reg.example:5000/ns"), location.File("/srv/target")
	arch := t.TempDir()
	m2m := func(o *pipeline.Options) { o.Destination.Location, o.Workspace = reg, location.File("/srv/ws") }
	m2d := func(o *pipeline.Options) { o.Destination.Location, o.Workspace = other, location.Location{} }
	d2m := func(o *pipeline.Options) {
		o.Destination.Location, o.Archive.From, o.Workspace = reg, location.File(arch), location.File(t.TempDir())
	}
	policy := func(o *pipeline.Options) { o.Signatures.Policy.Policy = "policy.json" }
	tests := []struct {
		name  string
		edits []func(*pipeline.Options)
		want  string // "" when valid
	}{
		{"mirror-to-mirror", nil, ""},
		{"mirror-to-disk", []func(*pipeline.Options){m2d}, ""},
		{"disk-to-mirror", []func(*pipeline.Options){d2m}, ""},
		{"disk-to-mirror in the default workspace", []func(*pipeline.Options){d2m, func(o *pipeline.Options) { o.Workspace = location.Location{} }}, ""},
		{"mirror-to-disk since a date", []func(*pipeline.Options){m2d, func(o *pipeline.Options) { o.Archive.Since = time.Now() }}, ""},
		{"plan only", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.PlanOnly = true }}, ""},
		{"a shard", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.PlanFile, o.Run.Shard, o.Run.Shards = "plan.json", 1, 2 }}, ""},
		{"finish", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.PlanFile, o.Run.Finish = "plan.json", true }}, ""},
		{"a policy judging a plan being made", []func(*pipeline.Options){policy, func(o *pipeline.Options) { o.Run.PlanOnly = true }}, ""},

		{"credentials in the destination", []func(*pipeline.Options){func(o *pipeline.Options) { o.Destination.Location = location.Docker("alice:pw@reg.example/ns") }},
			`docker://***@reg.example/ns: credentials in a reference are not supported`},
		{"no configuration", []func(*pipeline.Options){func(o *pipeline.Options) { o.ConfigPath = "" }},
			"no ImageSetConfiguration given: use -c imageset.yaml"},
		{"no destination", []func(*pipeline.Options){func(o *pipeline.Options) { o.Destination.Location = location.Location{} }},
			`destination "" must be docker://REGISTRY[:PORT]/NAMESPACE or file://DIR`},
		{"an OCI layout destination", []func(*pipeline.Options){func(o *pipeline.Options) { o.Destination.Location = location.OCI("/l") }},
			`destination "oci:///l" must be docker://REGISTRY[:PORT]/NAMESPACE or file://DIR`},
		{"a registry workspace", []func(*pipeline.Options){func(o *pipeline.Options) { o.Workspace = reg }},
			`--workspace "docker://reg.example:5000/ns" must be file://DIR or DIR`},
		{"a registry archive", []func(*pipeline.Options){func(o *pipeline.Options) { o.Archive.From = reg }},
			`--from "docker://reg.example:5000/ns" must be file://DIR or DIR`},
		{"a layout since-archive", []func(*pipeline.Options){m2d, func(o *pipeline.Options) { o.Archive.SinceArchive = location.OCI("/l") }},
			`--since-archive "oci:///l" must be file://DIR or DIR`},
		{"disk-to-mirror to a folder", []func(*pipeline.Options){d2m, func(o *pipeline.Options) { o.Destination.Location = other }},
			`disk-to-mirror needs a registry destination docker://REGISTRY/NAMESPACE, got "file:///srv/target"`},
		{"disk-to-mirror's workspace inside the archive", []func(*pipeline.Options){d2m, func(o *pipeline.Options) { o.Workspace = location.File(filepath.Join(arch, "ws")) }},
			"is inside the archive folder " + arch + ": disk-to-mirror writes nothing into the archive"},
		{"mirror-to-disk with a workspace", []func(*pipeline.Options){m2d, func(o *pipeline.Options) { o.Workspace = location.File("/srv/ws") }},
			"--workspace is for mirror-to-mirror; mirror-to-disk writes its working-dir inside the file:// destination"},
		{"mirror-to-mirror without a workspace", []func(*pipeline.Options){func(o *pipeline.Options) { o.Workspace = location.Location{} }},
			"mirror-to-mirror needs --workspace file://DIR for its working files (or use --from file://DIR for disk-to-mirror)"},
		{"since in mirror-to-mirror", []func(*pipeline.Options){func(o *pipeline.Options) { o.Archive.Since = time.Now() }},
			"--since, --since-archive and --full apply to mirror-to-disk only"},
		{"full in disk-to-mirror", []func(*pipeline.Options){d2m, func(o *pipeline.Options) { o.Archive.Full = true }},
			"--since, --since-archive and --full apply to mirror-to-disk only"},
		{"since-archive in mirror-to-mirror", []func(*pipeline.Options){func(o *pipeline.Options) { o.Archive.SinceArchive = other }},
			"--since, --since-archive and --full apply to mirror-to-disk only"},
		{"plan only and a plan", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.PlanOnly, o.Run.PlanFile, o.Run.Finish = true, "plan.json", true }},
			"--plan-only makes a plan; --plan FILE uses one: give one of them"},
		{"plan only and dry run", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.PlanOnly, o.Run.DryRun = true, true }},
			"--plan-only and --dry-run both only plan: give one of them"},
		{"plan only in disk-to-mirror", []func(*pipeline.Options){d2m, func(o *pipeline.Options) { o.Run.PlanOnly = true }},
			"--plan-only and --plan apply to mirror-to-mirror and mirror-to-disk; disk-to-mirror loads an archive as it is"},
		{"a plan in disk-to-mirror", []func(*pipeline.Options){d2m, func(o *pipeline.Options) { o.Run.PlanFile, o.Run.Finish = "plan.json", true }},
			"--plan-only and --plan apply to mirror-to-mirror and mirror-to-disk; disk-to-mirror loads an archive as it is"},
		{"a plan and dry run", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.PlanFile, o.Run.Finish, o.Run.DryRun = "plan.json", true, true }},
			"--dry-run makes its own plan: it does not take --plan FILE"},
		{"finish with a shard", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.PlanFile, o.Run.Finish, o.Run.Shards = "plan.json", true, 2 }},
			"--finish runs once after every shard: it takes no --shard"},
		{"a plan without a shard", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.PlanFile = "plan.json" }},
			"--plan FILE needs --shard I/N (or --shards N with JOB_COMPLETION_INDEX), or --finish"},
		{"a shard without a plan", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.Shard, o.Run.Shards = 0, 2 }},
			"--shard and --finish need the plan: --plan FILE (written by --plan-only)"},
		{"finish without a plan", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.Finish = true }},
			"--shard and --finish need the plan: --plan FILE (written by --plan-only)"},
		{"release services in mirror-to-disk", []func(*pipeline.Options){m2d, func(o *pipeline.Options) {
			o.Releases.GraphURL, o.Releases.SignatureURL = "http://127.0.0.1:8080/graph", "https://sigs.example/release"
		}}, ""},
		{"a graph URL in disk-to-mirror", []func(*pipeline.Options){d2m, func(o *pipeline.Options) { o.Releases.GraphURL = "https://graph.example" }},
			"--graph-url and --release-signature-url are for the connected side: disk-to-mirror reads the update graphs and signatures the archive carries"},
		{"a signature URL in disk-to-mirror", []func(*pipeline.Options){d2m, func(o *pipeline.Options) { o.Releases.SignatureURL = "https://sigs.example" }},
			"--graph-url and --release-signature-url are for the connected side: disk-to-mirror reads the update graphs and signatures the archive carries"},
		{"a graph URL that is not http", []func(*pipeline.Options){func(o *pipeline.Options) { o.Releases.GraphURL = "graph.example/api" }},
			`--graph-url "graph.example/api": give an http(s) URL`},
		{"a signature URL that is not http", []func(*pipeline.Options){func(o *pipeline.Options) { o.Releases.SignatureURL = "file:///sigs" }},
			`--release-signature-url "file:///sigs": give an http(s) URL`},
		{"a shard out of range", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.PlanFile, o.Run.Shard, o.Run.Shards = "plan.json", 2, 2 }},
			"shard 2 of 2: the index must be 0 to 1"},
		{"a negative shard", []func(*pipeline.Options){func(o *pipeline.Options) { o.Run.PlanFile, o.Run.Shard, o.Run.Shards = "plan.json", -1, 2 }},
			"shard -1 of 2: the index must be 0 to 1"},
		{"a policy in disk-to-mirror", []func(*pipeline.Options){d2m, policy},
			"--policy/--secure-policy judge the source registries when the plan is made (mirror-to-mirror, mirror-to-disk, --plan-only), not in disk-to-mirror (--from: use --archive-key) nor in a --plan run"},
		{"the system policy in a shard", []func(*pipeline.Options){func(o *pipeline.Options) {
			o.Signatures.Policy.Secure, o.Run.PlanFile, o.Run.Shard, o.Run.Shards = true, "plan.json", 0, 2
		}}, "nor in a --plan run"},
		{"a policy in a shard run without its workspace", []func(*pipeline.Options){policy, func(o *pipeline.Options) {
			o.Workspace, o.Run.PlanFile, o.Run.Shard, o.Run.Shards = location.Location{}, "plan.json", 0, 2
		}}, "nor in a --plan run"},
	}
	for _, tc := range tests {
		o := pipeline.Options{ConfigPath: "isc.yaml"}
		m2m(&o)
		for _, e := range tc.edits {
			e(&o)
		}
		if err := o.Validate(); (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q (\"\": valid)", tc.name, err, tc.want)
		}
	}
}

// TestValidateErrorKinds: the location errors are *location.Error and the
// credentials refusal wraps oci.ErrInvalidReference, for errors.As / Is.
func TestValidateErrorKinds(t *testing.T) {
	o := pipeline.Options{ConfigPath: "isc.yaml", Destination: dest(location.Docker("reg/ns")), Workspace: location.OCI("/x")}
	var le *location.Error
	if err := o.Validate(); !errors.As(err, &le) || le.Flag != "--workspace" {
		t.Errorf("got %v, want a *location.Error for --workspace", err)
	}
	o.Destination.Location = location.Docker("u:p@reg/ns")
	if err := o.Validate(); !errors.Is(err, oci.ErrInvalidReference) {
		t.Errorf("got %v, want oci.ErrInvalidReference", err)
	}
}
