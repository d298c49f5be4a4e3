package deletion_test

import (
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
)

// TestValidate holds every combination of the delete command's options that
// Validate refuses, with the message users see, and those it lets through.
func TestValidate(t *testing.T) {
	dest, ws := location.Docker("reg.example/ns"), location.File("/srv/ws")
	tests := []struct {
		name string
		o    deletion.Options
		want string // "" when valid
	}{
		{"generate from a configuration", deletion.Options{Generate: true, ConfigPath: "d.yaml", Workspace: ws, Destination: dest}, ""},
		{"generate the stale", deletion.Options{Generate: true, Stale: true, Selections: "latest", Workspace: ws, Destination: dest}, ""},
		{"execute a plan", deletion.Options{PlanFile: "p.yaml", Destination: dest}, ""},

		{"credentials in the destination", deletion.Options{PlanFile: "p.yaml", Destination: location.Docker("u:pw@reg/ns")},
			"docker://***@reg/ns: credentials in a reference are not supported"},
		{"no destination", deletion.Options{PlanFile: "p.yaml"},
			`destination "" must be docker://REGISTRY[:PORT]/NAMESPACE, the one the mirror runs wrote to`},
		{"a folder destination", deletion.Options{PlanFile: "p.yaml", Destination: ws},
			`destination "file:///srv/ws" must be docker://REGISTRY[:PORT]/NAMESPACE, the one the mirror runs wrote to`},
		{"a registry workspace", deletion.Options{Generate: true, Stale: true, Workspace: dest, Destination: dest},
			`--workspace "docker://reg.example/ns" must be file://DIR or DIR`},
		{"generate and execute", deletion.Options{Generate: true, Stale: true, PlanFile: "p.yaml", Workspace: ws, Destination: dest},
			"--generate writes a plan and --delete-yaml-file executes one: give one of them"},
		{"generate without a workspace", deletion.Options{Generate: true, Stale: true, Destination: dest},
			"--generate needs --workspace file://DIR: the workspace of the mirror runs"},
		{"stale and a configuration", deletion.Options{Generate: true, Stale: true, ConfigPath: "d.yaml", Workspace: ws, Destination: dest},
			"--stale plans what no current selection wants, -c what a DeleteImageSetConfiguration names: give one of them"},
		{"selections without stale", deletion.Options{Generate: true, ConfigPath: "d.yaml", Selections: "latest", Workspace: ws, Destination: dest},
			"--selections says which selections --stale counts: use it with --stale"},
		{"generate nothing", deletion.Options{Generate: true, Workspace: ws, Destination: dest},
			"--generate needs -c delete-isc.yaml (a DeleteImageSetConfiguration) or --stale"},
		{"nothing to do", deletion.Options{Destination: dest},
			"nothing to do: plan with --generate (-c delete-isc.yaml or --stale), then execute the reviewed plan with --delete-yaml-file"},
		{"execute with a configuration", deletion.Options{PlanFile: "p.yaml", ConfigPath: "d.yaml", Destination: dest},
			"-c and --stale make a plan: use them with --generate; --delete-yaml-file executes a plan as it is"},
		{"execute the stale", deletion.Options{PlanFile: "p.yaml", Stale: true, Destination: dest},
			"-c and --stale make a plan: use them with --generate"},
	}
	for _, tc := range tests {
		if err := tc.o.Validate(); (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q (\"\": valid)", tc.name, err, tc.want)
		}
	}
}
