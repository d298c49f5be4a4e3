package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// The commands that read catalogs honour $CONTAINERS_REGISTRIES_CONF as mirror
// runs do (a catalog whose registry is down is read from its mirror), and
// mirror's --registries-conf names a file that is not TOML with its line.
func TestRegistriesConfCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := registrytest.Start(t)
	if _, err := seed.Seed(ctx, seed.Options{Registry: reg.Host(), CatalogDir: "../../mirror/catalogimage/testdata/catalog/full", CatalogRepo: "mirror/ns/list", Insecure: true, WorkDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	dead := registrytest.ClosedAddr(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "registries.conf")
	os.WriteFile(conf, []byte("[[registry]]\nlocation = \""+dead+"\"\n[[registry.mirror]]\nlocation = \""+reg.Host()+"/mirror\"\n"), 0o644)
	t.Setenv("CONTAINERS_REGISTRIES_CONF", conf)
	out, serr, err := runCmd(ctx, "list", "operators", "--catalog", dead+"/ns/list:v1", "--workspace", filepath.Join(dir, "lw"))
	if err != nil || !strings.Contains(out, "foo   stable") {
		t.Fatalf("list operators through the mirror: %v\n%s%s", err, out, serr)
	}

	bad := filepath.Join(dir, "bad.conf")
	os.WriteFile(bad, []byte("[[registry]]\nlocation = quay.io\n"), 0o644)
	_, _, err = runCmd(ctx, "mirror", "-c", "../../testdata/demo/imageset.yaml", "--registries-conf", bad, "--workspace", filepath.Join(dir, "mw"), "docker://127.0.0.1:1/ns")
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("--registries-conf with a TOML error: %v", err)
	}
}
