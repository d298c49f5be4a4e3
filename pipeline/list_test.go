package pipeline_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/pipeline"
)

const listCatalog = "../mirror/catalogimage/testdata/catalog/full"

func TestListOperators(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.Start(t)
	res, err := seed.Seed(ctx, seed.Options{Registry: reg.Host(), CatalogDir: listCatalog, CatalogRepo: "ns/list", Insecure: true, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ref := res.Catalog

	tests := []struct {
		name, pkg, ch string
		want          string
		wantErr       string
	}{
		{name: "packages", want: `NAME  DEFAULT CHANNEL
bar   alpha
foo   stable
`},
		{name: "channels", pkg: "foo", want: `PACKAGE  DEFAULT CHANNEL
foo      stable

CHANNEL    HEAD
candidate  foo.v2.0.0-rc.1
stable     foo.v1.2.0
`},
		{name: "bundles", pkg: "foo", ch: "candidate", want: `PACKAGE  CHANNEL    HEAD
foo      candidate  foo.v2.0.0-rc.1

BUNDLE                  VERSION     REPLACES
foo.v1.2.0              1.2.0       -
foo.v2.0.0-rc.1 (head)  2.0.0-rc.1  foo.v1.2.0
`},
		{name: "no package", pkg: "nope", wantErr: `has no package "nope"`},
		{name: "no channel", pkg: "foo", ch: "nope", wantErr: `has no channel "nope"`},
		{name: "channel without package", ch: "stable", wantErr: "--channel needs --package"},
	}
	for _, src := range []string{listCatalog, ref} {
		for _, tc := range tests {
			t.Run(src+"/"+tc.name, func(t *testing.T) {
				l, err := pipeline.ListOperators(ctx, pipeline.ListOperatorsOptions{Catalog: src, Package: tc.pkg, Channel: tc.ch, Fetch: catalogimage.NewFetchOptions("", true, nil, nil)})
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("error = %v, want %q", err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if err := l.WriteTable(&buf); err != nil {
					t.Fatal(err)
				}
				if buf.String() != tc.want {
					t.Fatalf("got:\n%s\nwant:\n%s", buf.String(), tc.want)
				}
				if (src == ref) != (l.Digest != "") {
					t.Fatalf("Digest = %q", l.Digest)
				}
			})
		}
	}
	if _, err := pipeline.ListOperators(ctx, pipeline.ListOperatorsOptions{Catalog: reg.Host() + "/ns/absent:v1", Fetch: catalogimage.NewFetchOptions("", true, nil, nil)}); err == nil {
		t.Fatal("absent catalog listed")
	}
}
