package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// TestMissingTagNamesTags: a tag the repository lacks is reported with up to
// ten of the tags it has, instead of the registry's raw MANIFEST_UNKNOWN.
func TestMissingTagNamesTags(t *testing.T) {
	reg := registrytest.Start(t)
	h := reg.Host()
	for i := 1; i <= 12; i++ {
		imagetest.MustPush(t, fmt.Sprintf("%s/ns/many:v%02d", h, i), fakeimage.Spec{Seed: 3, Layers: 1})
	}
	imagetest.MustPush(t, h+"/ns/few:v1", fakeimage.Spec{Seed: 4, Layers: 1})
	imagetest.MustPush(t, h+"/ns/few:v2", fakeimage.Spec{Seed: 4, Layers: 1})
	r := New(Options{Retry: retry.Retries(0)})
	ctx := context.Background()

	tests := []struct {
		ref    string
		want   []string
		absent []string
	}{
		{h + "/ns/many:v13", []string{"ns/many has no tag v13", "it has 12 tags", "v03, v04", "v12"}, []string{"v01", "v02,", "MANIFEST_UNKNOWN"}},
		{h + "/ns/few:v3", []string{"ns/few has no tag v3; its tags: v1, v2"}, []string{"MANIFEST_UNKNOWN"}},
		{h + "/ns/none:v1", []string{"ns/none has no tag v1: the repository has no tags"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			for name, get := range map[string]func() error{
				"resolve": func() error { _, err := r.Resolve(ctx, tc.ref); return err },
				"manifest": func() error {
					i := strings.LastIndex(tc.ref, ":")
					_, err := r.Manifest(ctx, tc.ref[:i], tc.ref[i+1:])
					return err
				},
			} {
				err := get()
				if err == nil {
					t.Fatalf("%s: no error", name)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: %q does not say %q", name, err, w)
					}
				}
				for _, a := range tc.absent {
					if strings.Contains(err.Error(), a) {
						t.Errorf("%s: %q says %q", name, err, a)
					}
				}
				var re *endpoint.RegistryError
				var mt *MissingTagError
				if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound || !errors.As(err, &mt) {
					t.Errorf("%s: %v is not a 404 MissingTagError", name, err)
				}
			}
		})
	}
	// A destination asking whether a manifest is there gets a plain no.
	if ok, err := r.ManifestExists(ctx, h+"/ns/few", "v9", ""); ok || err != nil {
		t.Errorf("ManifestExists = %v, %v", ok, err)
	}
}
