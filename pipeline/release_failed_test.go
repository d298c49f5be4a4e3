package pipeline

import (
	"testing"

	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// A release payload that failed when a partial batch was written is one of
// the batch's failures on the disconnected side, not a release missing from
// the archive (which would refuse the whole load).
func TestReleaseFailedWhenArchived(t *testing.T) {
	t.Parallel()
	const d = "sha256:0da6316466d60a3a4535d5fed3589feb0391989982fba59d47d4c729912d6363"
	c := &chosenRelease{Ref: "quay.io/openshift-release-dev/ocp-release:4.15.0-x86_64", Repo: "quay.io/openshift-release-dev/ocp-release", Digest: d}
	for _, tc := range []struct {
		name   string
		failed []archive.FailedRecord
		want   bool
	}{
		{"none", nil, false},
		{"by digest", []archive.FailedRecord{{Source: "quay.io/openshift-release-dev/ocp-release@" + d, Error: "x"}}, true},
		{"as configured", []archive.FailedRecord{{Source: c.Ref, Error: "x"}}, true},
		{"another image", []archive.FailedRecord{{Source: "quay.io/other/image@sha256:1111111111111111111111111111111111111111111111111111111111111111", Error: "x"}}, false},
		{"its signature only", []archive.FailedRecord{{Source: c.PayloadRef(), Attachment: &oci.Attachment{Of: c.PayloadRef()}, Error: "x"}}, false},
	} {
		if got := failedWhenArchived(&archive.Manifest{Failed: tc.failed}, c); got != tc.want {
			t.Errorf("%s: failedWhenArchived = %v, want %v", tc.name, got, tc.want)
		}
	}
}
