package imageset

import (
	"strings"
	"testing"
)

// TestPlatformProgrammatic: a platform stanza built in code is validated as a
// loaded one, positions from the channels' Line fields.
func TestPlatformProgrammatic(t *testing.T) {
	c := &ImageSetConfiguration{Source: "built", Mirror: ImageSetConfigurationSpec{Platform: &Platform{
		Channels: []ReleaseChannel{{Name: "stable-4.16", Type: "OCP", Line: 4}, {Name: "eus-4.16", MinVersion: "4.16.9", MaxVersion: "4.16.1", Line: 6}},
	}}}
	err := c.Validate()
	want := []string{
		`built:4: mirror.platform.channels[0].type: unknown channel type "OCP" (did you mean ocp?)`,
		`built:6: mirror.platform.channels[1].minVersion: minVersion 4.16.9 is greater than maxVersion 4.16.1`,
	}
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d = %q, want prefix %q", i, lines[i], w)
		}
	}

	ok := []*Platform{
		{Channels: []ReleaseChannel{{Name: "stable-4.16", Type: "okd", MinVersion: "4.16.1", MaxVersion: "4.16.1", ShortestPath: true}}, Architectures: []string{"multi", "arm64"}},
		{Channels: []ReleaseChannel{{Name: "eus-4.16", Full: true}}, Platforms: []PlatformSpec{{Architecture: "arm64"}, {OS: "linux", Architecture: "s390x"}}},
		{Release: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("a", 64), KubeVirtContainer: true, Graph: true},
		{},
	}
	for _, p := range ok {
		d := &DeleteImageSetConfiguration{Delete: DeleteImageSetConfigurationSpec{Platform: p}}
		if err := d.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	bad := map[string]*Platform{
		`delete.platform.platforms[0].architecture: OpenShift publishes no release for architecture "riscv64"`: {Channels: []ReleaseChannel{{Name: "a-4.1"}}, Platforms: []PlatformSpec{{Architecture: "riscv64"}}},
		`delete.platform.platforms[0].os: OpenShift releases are built for linux only`:                         {Channels: []ReleaseChannel{{Name: "a-4.1"}}, Platforms: []PlatformSpec{{OS: "windows", Architecture: "amd64"}}},
		`delete.platform.release: release "oci:///x": oci:// is not supported for release payloads`:            {Release: "oci:///x"},
		`delete.platform.release: release "file:///x" uses transport file://`:                                  {Release: "file:///x"},
		`delete.platform.channels[0].name: channel name "stable 4.16" is not a channel name`:                   {Channels: []ReleaseChannel{{Name: "stable 4.16"}}},
		`delete.platform.architectures: architectures is empty`:                                                {Channels: []ReleaseChannel{{Name: "a-4.1"}}, Architectures: []string{}},
	}
	for want, p := range bad {
		d := &DeleteImageSetConfiguration{Delete: DeleteImageSetConfigurationSpec{Platform: p}}
		if err := d.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want %q", err, want)
		}
	}
}
