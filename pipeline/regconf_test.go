package pipeline_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
	"github.com/airlock-mirror/airlock/pipeline"
)

// A mirror-to-mirror run through registries.conf: the images of a source that
// is down come from its mirror, land at the destination under their source
// names with the digests asked for (checked with go-containerregistry), and the
// cluster resources name the source, never the mirror; an image of a blocked
// registry fails alone, naming registries.conf and its entry.
func TestRegistriesConfMirrorRun(t *testing.T) {
	holder := registrytest.Start(t) // the mirror, holding the images under mirror/
	dst := registrytest.Start(t)
	dead := registrytest.ClosedAddr(t) // the source, down
	a := imagetest.MustPush(t, holder.Host()+"/mirror/ns/a:v1", fakeimage.Spec{Seed: 11, Layers: 2})
	c := imagetest.MustPush(t, holder.Host()+"/mirror/ns/c:v2", fakeimage.Spec{Seed: 12, Layers: 1})
	conf := filepath.Join(t.TempDir(), "registries.conf")
	if err := os.WriteFile(conf, []byte(`[[registry]]
location = "`+dead+`"
[[registry.mirror]]
location = "`+holder.Host()+`/mirror"

[[registry]]
prefix = "`+dead+`/blocked"
location = "`+dead+`/blocked"
blocked = true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := opts(writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n"+
		"  - name: "+dead+"/ns/a@"+a.Digest.String()+"\n"+
		"  - name: "+dead+"/ns/c:v2\n"+
		"  - name: "+dead+"/blocked/b:v1\n"))
	o.Source.RegistriesConf = conf
	pipeline.SetRetry(&o, &retry.Policy{Times: 1, Base: time.Millisecond, Max: 5 * time.Millisecond})
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	res, err := pipeline.Mirror(context.Background(), o)
	if !errors.Is(err, pipeline.ErrIncomplete) || res == nil || res.Failed != 1 {
		t.Fatalf("err = %v, res = %+v: want one image failed", err, res)
	}
	for _, im := range res.Images {
		if strings.Contains(im.Source, "/blocked/") {
			if !strings.Contains(im.Error, conf) || !strings.Contains(im.Error, "blocked = true") || !strings.Contains(im.Error, `prefix = "`+dead+`/blocked"`) {
				t.Errorf("blocked image: %q, want registries.conf and its entry named", im.Error)
			}
		} else if im.Error != "" {
			t.Errorf("%s: %s", im.Source, im.Error)
		}
	}
	for ref, want := range map[string]string{
		dst.Host() + "/mirror/ns/a@" + a.Digest.String(): a.Digest.String(),
		dst.Host() + "/mirror/ns/c:v2":                   c.Digest.String(),
	} {
		got, err := crane.Digest(ref, crane.Insecure)
		if err != nil || got != want {
			t.Errorf("%s at the destination: %s, %v; want %s", ref, got, err, want)
		}
	}
	var all strings.Builder
	for _, f := range res.ClusterResources {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	if s := all.String(); !strings.Contains(s, "source: "+dead+"/ns\n") || strings.Contains(s, holder.Host()) {
		t.Errorf("cluster resources must name the source %s, not the mirror %s:\n%s", dead, holder.Host(), s)
	}
}

// A short name in the configuration stops the run before anything moves,
// naming the file, the line and the fully-qualified name to write; a
// registries.conf that is not TOML is named with its line.
func TestRegistriesConfRefusals(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "registries.conf")
	bad := filepath.Join(t.TempDir(), "registries.conf")
	os.WriteFile(empty, nil, 0o644)
	os.WriteFile(bad, []byte("[[registry]]\nlocation = quay.io\n"), 0o644)
	for _, tc := range []struct {
		name, conf, image string
		want              []string
		is                error
	}{
		{"short name", empty, "busybox:1.36", []string{"imageset.yaml line 5", "docker.io/library/busybox:1.36"}, registry.ErrShortName},
		{"two-part short name", empty, "ubi8/ubi", []string{"imageset.yaml line 5", "ubi8/ubi"}, registry.ErrShortName},
		{"TOML error", bad, "quay.io/ns/app:v1", []string{bad, "line 2"}, registry.ErrRegistriesConf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: "+tc.image+"\n"))
			o.Source.RegistriesConf = tc.conf
			o.Destination.Location = location.Docker(registrytest.ClosedAddr(t) + "/mirror")
			o.Workspace = location.File(t.TempDir())
			_, err := pipeline.Mirror(context.Background(), o)
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %q", err, w)
				}
			}
		})
	}
}

// Disk-to-mirror reads nothing from the sources, so a short name in the
// configuration an archive was made with does not stop it from being loaded.
func TestRegistriesConfShortNameDiskToMirror(t *testing.T) {
	o := opts(writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: busybox:1.36\n"))
	o.Archive.From = location.File(t.TempDir())
	o.Destination.Location = location.Docker(registrytest.ClosedAddr(t) + "/mirror")
	o.Workspace = location.File(t.TempDir())
	_, err := pipeline.Mirror(context.Background(), o)
	if err == nil || errors.Is(err, registry.ErrShortName) {
		t.Fatalf("err = %v, want the empty archive refused, not the short name", err)
	}
}
